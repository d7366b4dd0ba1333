package executor

// The resources phase: apply and delete failures, create gates, recreation, discovery; and post failures.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/memory"
	"github.com/hyperfleet/hyperfleet/resource"
)

// failing wraps the memory transport to make chosen operations fail.
type failing struct {
	*memory.Transport
	failCreate string
	failDelete string
}

func (f *failing) Create(ctx context.Context, target string, obj transport.Object) (transport.Object, error) {
	if transport.RefOf(obj).Name == f.failCreate {
		return nil, errors.New(`ConfigMap "BAD" is invalid: metadata.name: Invalid value (HTTP 422 Invalid)`)
	}
	return f.Transport.Create(ctx, target, obj)
}

func (f *failing) Delete(ctx context.Context, target string, ref transport.Ref, p string) error {
	if ref.Name == f.failDelete {
		return errors.New("delete refused")
	}
	return f.Transport.Delete(ctx, target, ref, p)
}

func TestApplyFailureStopsDeleteFailureContinues(t *testing.T) {
	task := `params:
  - name: deleting
    source: env.DELETING
    type: bool
    default: false
resources:
  - name: first
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: first, namespace: ns, annotations: {hyperfleet.io/generation: "1"}}
    discovery: {by_name: first, namespace: ns}
    lifecycle: {delete: {when: {expression: deleting}}}
  - name: bad
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: BAD, namespace: ns, annotations: {hyperfleet.io/generation: "1"}}
    discovery: {by_name: BAD, namespace: ns}
    lifecycle: {delete: {when: {expression: deleting}}}
  - name: third
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: third, namespace: ns, annotations: {hyperfleet.io/generation: "1"}}
    discovery: {by_name: third, namespace: ns}
    lifecycle: {delete: {when: {expression: deleting}}}
post:
  payloads:
    - name: s
      build:
        status: {expression: adapter.executionStatus}
        phase: {expression: 'adapter.?executionError.?phase.orValue("")'}
        step: {expression: 'adapter.?executionError.?step.orValue("")'}
        badErr: {expression: 'adapter.?resourceErrors.?bad.?message.orValue("")'}
        failed: {expression: 'adapter.?resourceErrors.orValue({}).map(k, k)'}
`
	env := map[string]string{}
	mem := memory.New(nil)
	f := &failing{Transport: mem, failCreate: "BAD", failDelete: "first"}
	h := newHarness(t, task, func(o *Options) {
		o.Transports = map[string]transport.Transport{"kubernetes": f}
		o.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	})
	st, post, _ := h.run(t, resource.Event{})
	s := post.Payloads["s"]
	if s["status"] != "failed" || s["phase"] != "resources" || s["step"] != "bad" || !strings.Contains(s["badErr"].(string), "HTTP 422") {
		t.Errorf("apply failure payload = %v", s)
	}
	if len(st.Trace.Resources.Steps) != 2 {
		t.Errorf("resources after an apply failure were processed: %+v", st.Trace.Resources.Steps)
	}
	if _, ok := st.Resources["third"]; ok {
		t.Error("third was applied after the failure")
	}

	// Deleting: first fails to delete, the others are still attempted.
	f.failCreate = ""
	h.run(t, resource.Event{}) // create bad and third
	env["DELETING"] = "true"
	st, post, _ = h.run(t, resource.Event{})
	s = post.Payloads["s"]
	if s["status"] != "failed" || s["step"] != "first" || len(st.Trace.Resources.Steps) != 3 {
		t.Errorf("delete failure payload = %v, steps %+v", s, st.Trace.Resources.Steps)
	}
	if _, ok := st.Resources["first"]; !ok {
		t.Error("a resource whose delete failed must stay in resources")
	}
	if _, ok := st.Resources["third"]; ok {
		t.Error("third was not deleted after first's delete failed")
	}
}

func TestCreateGateRecreateAndNewestDiscovery(t *testing.T) {
	task := `params:
  - name: gen
    source: env.GEN
  - name: allow
    source: env.ALLOW
    type: bool
    default: false
resources:
  - name: gated
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: gated, namespace: ns, annotations: {hyperfleet.io/generation: "{{ .gen }}"}}
    lifecycle:
      create:
        when: {expression: allow}
  - name: job
    recreate_on_change: true
    manifest:
      apiVersion: batch/v1
      kind: Job
      metadata:
        name: "job-{{ .gen }}"
        namespace: ns
        labels: {app: j}
        annotations: {hyperfleet.io/generation: "{{ .gen }}"}
    discovery:
      namespace: ns
      by_selectors:
        label_selector: {app: j}
  - name: fixed
    recreate_on_change: true
    manifest:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: fixed, namespace: ns, annotations: {hyperfleet.io/generation: "{{ .gen }}"}}
`
	env := map[string]string{"GEN": "1"}
	h := newHarness(t, task, func(o *Options) { o.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok } })
	ops := func(st *State) string {
		var out []string
		for _, s := range st.Trace.Resources.Steps {
			out = append(out, s.Name+"="+string(s.Operation))
		}
		return strings.Join(out, " ")
	}
	st, _, _ := h.run(t, resource.Event{})
	if ops(st) != "gated=CREATE_GATED job=CREATE fixed=CREATE" {
		t.Errorf("run 1: %s", ops(st))
	}
	env["GEN"], env["ALLOW"] = "2", "true"
	st, _, _ = h.run(t, resource.Event{})
	if ops(st) != "gated=CREATE job=CREATE fixed=RECREATE" {
		t.Errorf("run 2: %s", ops(st))
	}
	// Two jobs match the selector; discovery picks the newest generation.
	if name := st.Resources["job"].(map[string]any)["metadata"].(map[string]any)["name"]; name != "job-2" {
		t.Errorf("discovered %v, want job-2", name)
	}
}

func TestNestedDiscovery(t *testing.T) {
	task := `params:
  - name: id
    source: event.id
resources:
  - name: work
    transport:
      client: maestro
      maestro: {target_cluster: spoke1}
    manifest:
      apiVersion: work.open-cluster-management.io/v1
      kind: ManifestWork
      metadata: {name: "{{ .id }}-mw", annotations: {hyperfleet.io/generation: "1"}}
      spec:
        workload:
          manifests:
            - {apiVersion: v1, kind: Namespace, metadata: {name: "{{ .id }}", labels: {type: ns}}}
            - {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: "{{ .id }}"}}
    discovery: {by_name: "{{ .id }}-mw"}
    nested_discoveries:
      - name: ns0
        discovery: {by_selectors: {label_selector: {type: ns}}}
      - name: cfg0
        discovery: {by_name: cfg}
post:
  payloads:
    - name: s
      build:
        phase: {expression: 'statusFeedbackValue(resources.ns0.statusFeedback, "phase")'}
        cfgAvailable: {expression: 'conditionStatus(resources.cfg0.conditions, "Available")'}
`
	overrides := map[string]transport.Object{"c1-mw": {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
		"metadata": map[string]any{"name": "c1-mw", "namespace": "spoke1"},
		"spec": map[string]any{"workload": map[string]any{"manifests": []any{
			map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "c1", "labels": map[string]any{"type": "ns"}}},
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg", "namespace": "c1"}}}}},
		"status": map[string]any{"resourceStatus": map[string]any{"manifests": []any{
			map[string]any{"resourceMeta": map[string]any{"ordinal": int64(0), "kind": "Namespace", "name": "c1", "namespace": ""},
				"statusFeedback": map[string]any{"values": []any{map[string]any{"name": "phase", "fieldValue": map[string]any{"string": "Active"}}}}},
			map[string]any{"resourceMeta": map[string]any{"ordinal": int64(1), "kind": "ConfigMap", "name": "cfg", "namespace": "c1"},
				"conditions": []any{map[string]any{"type": "Available", "status": "True"}}}}}}}}
	mem := memory.New(overrides)
	h := newHarness(t, task, func(o *Options) { o.Transports = map[string]transport.Transport{"maestro": mem} })
	_, post, err := h.run(t, event)
	if err != nil {
		t.Fatal(err)
	}
	if s := post.Payloads["s"]; s["phase"] != "Active" || s["cfgAvailable"] != "True" {
		t.Errorf("nested payload = %v", s)
	}
	if mem.Ops[0].Target != "spoke1" {
		t.Errorf("target = %q", mem.Ops[0].Target)
	}
}

func TestPostFailures(t *testing.T) {
	task := `params:
  - name: clusterId
    source: event.id
post:
  payloads:
    - name: s
      build:
        x: "1"
  post_actions:
    - name: report
      api_call:
        method: PUT
        url: /clusters/{{ .clusterId }}/statuses
        body: "{{ .s }}"
`
	h := newHarness(t, task)
	h.api.codes["PUT /clusters/c1/statuses"] = 400
	_, post, err := h.run(t, event)
	if err == nil || !errors.Is(err, ErrPost) || post.Retryable || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("400: err %v retryable %v", err, post.Retryable)
	}
	h.api.codes["PUT /clusters/c1/statuses"] = 503
	_, post, err = h.run(t, event)
	if err == nil || !post.Retryable {
		t.Errorf("503: err %v retryable %v", err, post.Retryable)
	}
}
