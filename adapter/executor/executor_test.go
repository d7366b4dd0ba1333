package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/memory"
	"github.com/hyperfleet/hyperfleet/phase"
)

var clock = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fakeAPI is an httptest HyperFleet API: GET answers from a map by path,
// PUT .../statuses records the body.
type fakeAPI struct {
	mu      sync.Mutex
	objects map[string]any
	codes   map[string]int
	puts    []map[string]any
	srv     *httptest.Server
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{objects: map[string]any{}, codes: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		path := strings.TrimPrefix(r.URL.Path, "/api/hyperfleet/v1")
		if code, ok := f.codes[r.Method+" "+path]; ok {
			w.WriteHeader(code)
			w.Write([]byte(`{"code":"X"}`))
			return
		}
		switch r.Method {
		case http.MethodGet:
			obj, ok := f.objects[path]
			if !ok {
				w.WriteHeader(404)
				return
			}
			json.NewEncoder(w).Encode(obj)
		case http.MethodPut:
			raw, _ := io.ReadAll(r.Body)
			var body map[string]any
			json.Unmarshal(raw, &body)
			f.puts = append(f.puts, body)
			w.WriteHeader(201)
			w.Write(raw)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) lastPut(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.puts) == 0 {
		t.Fatal("no status was reported")
	}
	return f.puts[len(f.puts)-1]
}

const adapterConfig = "adapter:\n  name: unit\n  version: \"1\"\n"

func bundle(t testing.TB, task string, files map[string]string) *taskconfig.Bundle {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(adapterConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(task), 0o644)
	b, problems := taskconfig.Load(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "t.yaml"), taskconfig.Options{})
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	return b
}

type harness struct {
	api     *fakeAPI
	cluster *memory.Transport
	engine  *Engine
}

func newHarness(t testing.TB, task string, opts ...func(*Options)) *harness {
	t.Helper()
	api := newFakeAPI(t)
	client, err := apiclient.New(apiclient.Config{BaseURL: api.srv.URL, RetryAttempts: 2, BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cluster := memory.New(nil)
	o := Options{API: client, Transports: map[string]transport.Transport{"kubernetes": cluster}, Now: func() time.Time { return clock },
		LookupEnv: func(k string) (string, bool) {
			v, ok := map[string]string{"REGION": "eu-west-1", "EMPTY": ""}[k]
			return v, ok
		}}
	for _, fn := range opts {
		fn(&o)
	}
	eng, err := New(bundle(t, task, nil), o)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{api: api, cluster: cluster, engine: eng}
}

func (h *harness) run(t *testing.T, event map[string]any) (*State, *PostResult, error) {
	t.Helper()
	res, err := h.engine.Run(context.Background(), event)
	return res.State, res.Post, err
}

var event = map[string]any{"id": "c1", "kind": "Cluster", "href": "/api/hyperfleet/v1/clusters/c1", "generation": int64(3)}

// statusTask is the guide's landing-zone pattern: a namespace and a config
// map, deletion ordering and the standard Health and Finalized conditions.
const statusTask = `params:
  - name: clusterId
    source: event.id
    required: true
  - name: region
    source: env.REGION
    default: us-east-1
preconditions:
  - name: getCluster
    api_call:
      url: /clusters/{{ .clusterId }}
    capture:
      - name: generation
        field: generation
      - name: is_deleting
        expression: has(getCluster.deleted_time)
      - name: reconciled
        expression: 'conditionStatus(status.conditions, "Reconciled")'
resources:
  - name: cm
    manifest: |
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ .clusterId }}-config"
        namespace: "{{ .clusterId }}"
        labels:
          hyperfleet.io/cluster-id: "{{ .clusterId }}"
        annotations:
          hyperfleet.io/generation: "{{ .generation }}"
      data:
        region: "{{ .region }}"
        {{ if eq .region "eu-west-1" }}tier: eu{{ else }}tier: other{{ end }}
    discovery:
      namespace: "{{ .clusterId }}"
      by_selectors:
        label_selector:
          hyperfleet.io/cluster-id: "{{ .clusterId }}"
    lifecycle:
      delete:
        when:
          expression: is_deleting
  - name: ns
    manifest:
      apiVersion: v1
      kind: Namespace
      metadata:
        name: "{{ .clusterId }}"
        labels:
          hyperfleet.io/cluster-id: "{{ .clusterId }}"
        annotations:
          hyperfleet.io/generation: "{{ .generation }}"
    discovery:
      by_name: "{{ .clusterId }}"
    lifecycle:
      delete:
        when:
          expression: is_deleting && !resources.?cm.hasValue()
post:
  payloads:
    - name: status
      build:
        adapter: "{{ .adapter.name }}"
        observed_generation:
          expression: generation
        observed_time: '{{ now | date "2006-01-02T15:04:05Z07:00" }}'
        conditions:
          - type: Applied
            status:
              expression: 'resources.?cm.hasValue() ? "True" : "False"'
          - type: Available
            status:
              expression: 'resources.?ns.hasValue() && resources.?cm.hasValue() ? "True" : "False"'
          - type: Health
            status:
              expression: 'adapter.executionStatus == "success" && !adapter.resourcesSkipped ? "True" : "False"'
            reason:
              expression: 'adapter.?executionError.?phase.orValue(adapter.?skipReason.orValue("Healthy"))'
            message:
              expression: 'adapter.?executionError.?message.orValue("ok")'
          - type: Finalized
            status:
              expression: 'is_deleting && adapter.executionStatus == "success" && !resources.?ns.hasValue() && !resources.?cm.hasValue() ? "True" : "False"'
        data:
          region:
            field: region
          missing:
            field: nothing.here
            default: fallback
          tier:
            expression: resources.?cm.?data.?tier.orValue("")
  post_actions:
    - name: report
      api_call:
        method: PUT
        url: /clusters/{{ .clusterId }}/statuses
        body: "{{ .status }}"
`

func cond(t *testing.T, payload map[string]any, typ string) string {
	t.Helper()
	for _, c := range payload["conditions"].([]any) {
		m := c.(map[string]any)
		if m["type"] == typ {
			return m["status"].(string)
		}
	}
	t.Fatalf("no %s condition in %v", typ, payload)
	return ""
}

// One resource's life through the engine, stage by stage: each stage runs
// on what the previous one left, so a failed stage stops the rest.
func TestRunCreateSkipUpdateDelete(t *testing.T) {
	h := newHarness(t, statusTask)
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{map[string]any{"type": "Reconciled", "status": "False"}}}}
	var st *State
	run := func(t *testing.T) {
		t.Helper()
		var err error
		if st, _, err = h.run(t, event); err != nil {
			t.Fatal(err)
		}
	}
	ops := func() string {
		var out []string
		for _, s := range st.Trace.Resources.Steps {
			out = append(out, s.Name+"="+string(s.Operation))
		}
		return strings.Join(out, " ")
	}
	stages := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"first run creates both and reports Applied, Available, Health with data and captures", func(t *testing.T) {
			run(t)
			if ops() != "cm=CREATE ns=CREATE" {
				t.Errorf("operations = %s, want cm=CREATE ns=CREATE", ops())
			}
			p := h.api.lastPut(t)
			if p["adapter"] != "unit" || p["observed_generation"] != float64(3) || p["observed_time"] != "2025-06-01T12:00:00Z" {
				t.Errorf("payload header = %v, want adapter unit, observed_generation 3, the frozen clock's time", p)
			}
			if cond(t, p, "Applied") != "True" || cond(t, p, "Available") != "True" || cond(t, p, "Health") != "True" || cond(t, p, "Finalized") != "False" {
				t.Errorf("conditions = %v, want Applied, Available, Health True and Finalized False", p["conditions"])
			}
			data := p["data"].(map[string]any)
			if data["region"] != "eu-west-1" || data["missing"] != "fallback" || data["tier"] != "eu" {
				t.Errorf("data = %v, want region eu-west-1, missing fallback, tier eu", data)
			}
			if st.Vars["reconciled"] != "False" || st.Vars["is_deleting"] != false {
				t.Errorf("captures = %v, want reconciled False and is_deleting false", st.Vars)
			}
		}},
		{"same generation skips both", func(t *testing.T) {
			run(t)
			if ops() != "cm=SKIP ns=SKIP" {
				t.Errorf("operations = %s, want cm=SKIP ns=SKIP", ops())
			}
		}},
		{"new generation updates both and reports it", func(t *testing.T) {
			h.api.objects["/clusters/c1"].(map[string]any)["generation"] = 4
			run(t)
			if ops() != "cm=UPDATE ns=UPDATE" {
				t.Errorf("operations = %s, want cm=UPDATE ns=UPDATE", ops())
			}
			if g := h.api.lastPut(t)["observed_generation"]; g != float64(4) {
				t.Errorf("observed_generation = %v, want 4", g)
			}
		}},
		// The config map goes, rediscovery finds it gone, and the namespace
		// that waits for it cascades in the same run.
		{"deletion removes both in one run and reports Finalized", func(t *testing.T) {
			h.api.objects["/clusters/c1"].(map[string]any)["deleted_time"] = "2025-06-01T11:00:00Z"
			run(t)
			if ops() != "cm=DELETE ns=DELETE" {
				t.Errorf("operations = %s, want cm=DELETE ns=DELETE", ops())
			}
			p := h.api.lastPut(t)
			if cond(t, p, "Finalized") != "True" || cond(t, p, "Health") != "True" {
				t.Errorf("conditions = %v, want Finalized and Health True", p["conditions"])
			}
			if len(st.Resources) != 0 {
				t.Errorf("deleted resources still in context: %v", st.Resources)
			}
		}},
		{"with nothing left both are absent and it stays Finalized", func(t *testing.T) {
			run(t)
			if ops() != "cm=ABSENT ns=ABSENT" || cond(t, h.api.lastPut(t), "Finalized") != "True" {
				t.Errorf("operations = %s, Finalized %s; want cm=ABSENT ns=ABSENT and Finalized True", ops(), cond(t, h.api.lastPut(t), "Finalized"))
			}
		}},
	}
	for _, stage := range stages {
		if !t.Run(stage.name, stage.fn) {
			return
		}
	}
}

// A discovery that finds nothing right after an apply looks for something
// other than what was applied: the resources phase fails there, naming the
// resource and the discovery, as upstream's adapter does (its e2e adapter
// cl-m-wrong-ds), instead of reporting a healthy run about nothing.
func TestDiscoveryThatFindsNothingFailsTheResourcesPhase(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		ops            string // operations recorded
		step           string
		want           []string // in the error message
	}{
		{"by name", `by_name: "{{ .clusterId }}"`, `by_name: "{{ .clusterId }}-wrong"`, "cm=CREATE ns=CREATE", "ns",
			[]string{`resource ns: Namespace "c1" was created, but discovery.by_name "c1-wrong" found no Namespace of that name`}},
		{"by selectors", "hyperfleet.io/cluster-id: \"{{ .clusterId }}\"\n    lifecycle", "hyperfleet.io/cluster-id: other\n    lifecycle", "cm=CREATE", "cm",
			[]string{`resource cm: ConfigMap "c1-config" was created, but discovery.by_selectors (label_selector hyperfleet.io/cluster-id=other) found no ConfigMap in namespace "c1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := strings.Replace(statusTask, tc.from, tc.to, 1)
			if task == statusTask {
				t.Fatalf("the test's edit of the task config did not apply")
			}
			h := newHarness(t, task)
			h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
			st, _, err := h.run(t, event)
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, s := range st.Trace.Resources.Steps {
				ops = append(ops, s.Name+"="+string(s.Operation))
			}
			if strings.Join(ops, " ") != tc.ops {
				t.Errorf("operations = %v, want %s (the phase stops at the failed resource)", ops, tc.ops)
			}
			e := st.Meta.ExecutionError
			if st.Meta.ExecutionStatus != phase.ExecutionFailed || e == nil || e.Phase != phase.Resources || e.Step != tc.step || st.Trace.Resources.Outcome != phase.Failed {
				t.Fatalf("meta = %+v, error %+v, resources outcome %s", st.Meta, e, st.Trace.Resources.Outcome)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
			// The failure is reported: Health=False with the phase and the message.
			p := h.api.lastPut(t)
			if cond(t, p, "Health") != "False" {
				t.Errorf("Health = %s, want False", cond(t, p, "Health"))
			}
			for _, c := range p["conditions"].([]any) {
				if m := c.(map[string]any); m["type"] == "Health" && (m["reason"] != "resources" || !strings.Contains(m["message"].(string), tc.want[0])) {
					t.Errorf("Health = %v", m)
				}
			}
		})
	}
	// Without a discovery block (and so without lifecycle.delete, which
	// needs one) the applied object is what the run sees; nothing changes
	// there.
	noDiscovery := strings.Replace(statusTask, "    discovery:\n      by_name: \"{{ .clusterId }}\"\n"+
		"    lifecycle:\n      delete:\n        when:\n          expression: is_deleting && !resources.?cm.hasValue()\n", "", 1)
	if noDiscovery == statusTask {
		t.Fatal("the test's edit of the task config did not apply")
	}
	h := newHarness(t, noDiscovery)
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
	if st, _, err := h.run(t, event); err != nil || st.Meta.ExecutionStatus != phase.ExecutionSucceeded {
		t.Errorf("without discovery: %v, %+v", err, st.Meta)
	}
}

func TestParamsSourcesAndTypes(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("  s3cret \n"), 0o600)
	task := `params:
  - name: clusterId
    source: event.id
    required: true
  - name: parentId
    source: event.owner_references.id
  - name: gen
    source: event.generation
    type: int
  - name: genText
    source: event.generation
    type: string
  - name: ratio
    source: env.RATIO
    type: float
    default: "1.5"
  - name: flag
    source: env.FLAG
    type: bool
    default: "yes"
  - name: region
    source: env.REGION
  - name: empty
    source: env.EMPTY
    default: dflt
  - name: cluster
    source:
      api_call:
        url: /clusters/{{ .clusterId }}
  - name: clusterName
    source: cluster.name
  - name: firstTag
    source: cluster.spec.tags[0]
  - name: doubled
    source:
      expression: gen * 2
  - name: token
    source:
      file:
        path: ` + tok + `
  - name: optionalBroken
    source:
      expression: cluster.spec.nope.deeper
    default: fine
  - name: cmValue
    source: configmap.kube-system.settings.mode
  - name: secretValue
    source: secret.kube-system.creds.password
post:
  payloads:
    - name: p
      build:
        all:
          expression: '[clusterId, parentId, gen, genText, ratio, flag, region, empty, clusterName, firstTag, doubled, token, optionalBroken, cmValue, secretValue]'
`
	h := newHarness(t, task)
	h.api.objects["/clusters/np1"] = map[string]any{"name": "pool", "spec": map[string]any{"tags": []any{"a", "b"}}}
	h.cluster.Create(context.Background(), "", transport.Object{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "kube-system"}, "data": map[string]any{"mode": "fast"}})
	h.cluster.Create(context.Background(), "", transport.Object{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "creds", "namespace": "kube-system"}, "data": map[string]any{"password": "aHVudGVyMg=="}})
	st, post, err := h.run(t, map[string]any{"id": "np1", "kind": "NodePool", "generation": 7.0, "owner_references": map[string]any{"id": "c9", "kind": "Cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Meta.ExecutionStatus != phase.ExecutionSucceeded {
		t.Fatalf("run failed: %+v", st.Meta.ExecutionError)
	}
	got, _ := json.Marshal(post.Payloads["p"]["all"])
	want := `["np1","c9",7,"7","1.5","true","eu-west-1","dflt","pool","a",14,"s3cret","fine","fast","hunter2"]`
	if string(got) != strings.ReplaceAll(strings.ReplaceAll(want, `"1.5"`, `1.5`), `"true"`, `true`) {
		t.Errorf("params = %s", got)
	}
	if st.Trace.Params.Steps[13].Warning == "" {
		t.Error("optional param whose expression failed has no warning")
	}
}

func TestRequiredParamMissingFailsButPostRuns(t *testing.T) {
	task := `params:
  - name: clusterId
    source: event.id
    required: true
  - name: must
    source: env.NOT_SET
    required: true
post:
  payloads:
    - name: status
      build:
        conditions:
          - type: Health
            status:
              expression: 'adapter.executionStatus == "success" ? "True" : "False"'
            message:
              expression: 'adapter.executionError.phase + "/" + adapter.executionError.step + ": " + adapter.executionError.message'
  post_actions:
    - name: report
      api_call:
        method: PUT
        url: /clusters/{{ .clusterId }}/statuses
        body: "{{ .status }}"
`
	h := newHarness(t, task)
	st, _, err := h.run(t, event)
	if err != nil {
		t.Fatal(err)
	}
	if st.Trace.Preconditions.Outcome != phase.Skipped || st.Trace.Resources.Outcome != phase.Skipped {
		t.Errorf("later phases ran: %s %s", st.Trace.Preconditions.Outcome, st.Trace.Resources.Outcome)
	}
	p := h.api.lastPut(t)
	msg := p["conditions"].([]any)[0].(map[string]any)["message"]
	if cond(t, p, "Health") != "False" || !strings.Contains(msg.(string), `params/must: required param "must"`) {
		t.Errorf("Health = %v", p["conditions"])
	}
}

func TestPreconditionsNotMetSkipsResources(t *testing.T) {
	task := `params:
  - name: clusterId
    source: event.id
preconditions:
  - name: getCluster
    api_call:
      url: /clusters/{{ .clusterId }}
    capture:
      - name: phase
        field: "{.status.conditions[?(@.type=='Reconciled')].status}"
    conditions:
      - field: phase
        operator: equals
        value: "False"
      - field: getCluster.spec.nodes
        operator: greaterThan
        value: 2
  - name: second
    expression: phase == "never"
resources:
  - name: ns
    manifest:
      apiVersion: v1
      kind: Namespace
      metadata:
        name: x
post:
  payloads:
    - name: s
      build:
        skipped:
          expression: adapter.resourcesSkipped
        reason:
          expression: adapter.skipReason
`
	h := newHarness(t, task)
	h.api.objects["/clusters/c1"] = map[string]any{"spec": map[string]any{"nodes": 5}, "status": map[string]any{"conditions": []any{map[string]any{"type": "Reconciled", "status": "False"}}}}
	st, post, _ := h.run(t, event)
	if st.Trace.Preconditions.Outcome != phase.NotMet || len(h.cluster.Ops) != 0 || st.Meta.ExecutionStatus != phase.ExecutionSucceeded {
		t.Fatalf("outcome %s, ops %v, status %s", st.Trace.Preconditions.Outcome, h.cluster.Ops, st.Meta.ExecutionStatus)
	}
	s := post.Payloads["s"]
	if s["skipped"] != true || !strings.Contains(s["reason"].(string), `precondition "second" not met: expression "phase == \"never\"" is false`) {
		t.Errorf("payload = %v", s)
	}
	// A failing structured condition stops at that precondition.
	h.api.objects["/clusters/c1"].(map[string]any)["spec"] = map[string]any{"nodes": 1}
	_, post, _ = h.run(t, event)
	if r := post.Payloads["s"]["reason"].(string); !strings.Contains(r, `"getCluster" not met: getCluster.spec.nodes greaterThan 2 (got 1)`) {
		t.Errorf("reason = %s", r)
	}
}

func TestPreconditionAPIErrorAndGone(t *testing.T) {
	task := `params:
  - name: clusterId
    source: event.id
preconditions:
  - name: getCluster
    api_call:
      url: /clusters/{{ .clusterId }}
      retry_attempts: 2
post:
  payloads:
    - name: s
      build:
        health:
          expression: 'adapter.executionStatus'
        msg:
          expression: 'adapter.?executionError.?message.orValue("")'
  post_actions:
    - name: report
      api_call:
        method: PUT
        url: /clusters/{{ .clusterId }}/statuses
        body: "{{ .s }}"
`
	h := newHarness(t, task)
	h.api.codes["GET /clusters/c1"] = 500
	st, _, err := h.run(t, event)
	if err != nil {
		t.Fatal(err)
	}
	p := h.api.lastPut(t)
	if p["health"] != "failed" || !strings.Contains(p["msg"].(string), "returned HTTP 500") {
		t.Errorf("payload after a 500 = %v", p)
	}
	if c := st.Trace.Preconditions.Steps[0].Call; c == nil || c.Attempts != 2 {
		t.Errorf("call = %+v", c)
	}
	// 404: the resource is gone; the run ends cleanly and reports nothing.
	delete(h.api.codes, "GET /clusters/c1")
	h.api.puts = nil
	st, post, err := h.run(t, event)
	if err != nil || !st.Gone || st.Meta.ExecutionStatus != phase.ExecutionSucceeded || len(h.api.puts) != 0 || post.Reported {
		t.Errorf("gone: err %v gone %v status %s puts %d", err, st.Gone, st.Meta.ExecutionStatus, len(h.api.puts))
	}
	if st.Trace.Post.Actions[0].Outcome != ActionSkipped {
		t.Errorf("post action on a gone resource: %+v", st.Trace.Post.Actions[0])
	}
}

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
	st, post, _ := h.run(t, nil)
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
	h.run(t, nil) // create bad and third
	env["DELETING"] = "true"
	st, post, _ = h.run(t, nil)
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
	st, _, _ := h.run(t, nil)
	if ops(st) != "gated=CREATE_GATED job=CREATE fixed=CREATE" {
		t.Errorf("run 1: %s", ops(st))
	}
	env["GEN"], env["ALLOW"] = "2", "true"
	st, _, _ = h.run(t, nil)
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

func TestStateJSONRoundTripKeepsIntegers(t *testing.T) {
	st := NewState(map[string]any{"id": "x", "generation": int64(5)})
	st.Vars["gen"] = int64(7)
	st.Vars["ratio"] = 1.5
	st.Resources["r"] = map[string]any{"metadata": map[string]any{"generation": int64(2)}}
	raw, _ := json.Marshal(st)
	var back State
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Vars["gen"] != int64(7) || back.Vars["ratio"] != 1.5 || back.Event["generation"] != int64(5) ||
		back.Resources["r"].(map[string]any)["metadata"].(map[string]any)["generation"] != int64(2) {
		t.Errorf("round trip: %#v %#v", back.Vars, back.Event)
	}
}

func TestCheckOperators(t *testing.T) {
	tests := []struct {
		op     string
		actual any
		found  bool
		value  any
		want   bool
	}{
		{"equals", "True", true, "True", true},
		{"equals", int64(3), true, 3.0, true},
		{"equals", "77", true, int64(77), true},
		{"equals", "007", true, "7", false},
		{"equals", nil, false, "x", false},
		{"notEquals", "a", true, "b", true},
		{"notEquals", nil, false, "b", true},
		{"in", "us-east-1", true, []any{"us-east-1", "eu"}, true},
		{"in", "x", true, []any{"a"}, false},
		{"notIn", "x", true, []any{"a"}, true},
		{"notIn", "a", true, []any{"a"}, false},
		{"contains", "production-eu", true, "prod", true},
		{"contains", []any{"a", "b"}, true, "b", true},
		{"contains", map[string]any{"k": 1}, true, "k", true},
		{"contains", "dev", true, "prod", false},
		{"greaterThan", int64(5), true, int64(3), true},
		{"greaterThan", "5", true, 5, false},
		{"greaterThan", nil, false, 1, false},
		{"lessThan", 2.5, true, 3, true},
		{"greaterThanOrEqual", int64(3), true, 3, true},
		{"lessThanOrEqual", int64(4), true, 3, false},
		{"exists", "", true, nil, true},
		{"exists", nil, true, nil, false},
		{"exists", nil, false, nil, false},
		{"notExists", nil, false, nil, true},
		{"notExists", "x", true, nil, false},
	}
	for _, tc := range tests {
		got, err := Check(tc.op, tc.actual, tc.found, taskconfig.NormalizedCopy(tc.value))
		if err != nil || got != tc.want {
			t.Errorf("Check(%s, %v, %v) = %v, %v; want %v", tc.op, tc.actual, tc.value, got, err, tc.want)
		}
	}
	if _, err := Check("in", "a", true, "a"); err == nil {
		t.Error("in with a scalar value accepted")
	}
	if _, err := Check("greaterThan", 1, true, "big"); err == nil {
		t.Error("greaterThan with a non-number accepted")
	}
	if _, err := Check("bogus", 1, true, 1); err == nil {
		t.Error("unknown operator accepted")
	}
}

func TestNormalizeEvent(t *testing.T) {
	ce := map[string]any{"specversion": "1.0", "id": "ce-id", "type": "t", "data": map[string]any{"id": "abc", "generation": int64(5)}}
	if got := NormalizeEvent(ce); got["id"] != "abc" {
		t.Errorf("CloudEvent data not used: %v", got)
	}
	plain := map[string]any{"id": "abc", "data": map[string]any{"x": 1}}
	if got := NormalizeEvent(plain); got["id"] != "abc" {
		t.Errorf("plain event with a data field: %v", got)
	}
}

func TestMetricsPerRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	h := newHarness(t, statusTask, func(o *Options) { o.Metrics = m })
	client, _ := apiclient.New(apiclient.Config{AdapterName: "unit", BaseURL: h.api.srv.URL, Metrics: m})
	h.engine.opts.API = client
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
	if _, _, err := h.run(t, event); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`hyperfleet_adapter_runs_total{adapter_name="unit",outcome="success"}`:                                                                                 1,
		`hyperfleet_adapter_resource_operations_total{adapter_name="unit",operation="create",outcome="ok",transport="kubernetes"}`:                             2,
		`hyperfleet_adapter_api_requests_total{adapter_name="unit",api="hyperfleet",endpoint="/clusters/{clusterId}",method="GET",status_code="200"}`:          1,
		`hyperfleet_adapter_api_requests_total{adapter_name="unit",api="hyperfleet",endpoint="/clusters/{clusterId}/statuses",method="PUT",status_code="201"}`: 1,
	} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(t, reg, `hyperfleet_adapter_phase_duration_seconds_count{adapter_name="unit",outcome="success",phase="resources"}`); got != 1 {
		t.Errorf("resources phase observations = %v", got)
	}
}

// metricValue reads one series from a registry in the exposition format.
func metricValue(t *testing.T, reg *prometheus.Registry, series string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		expfmt.MetricFamilyToText(&b, f)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, series+" ") {
			var v float64
			fmt.Sscan(strings.TrimPrefix(line, series+" "), &v)
			return v
		}
	}
	return -1
}

// A worker runs one engine for many resources at once (concurrent
// activities): runs must not share mutable state. Run under -race too
// (make race).
func TestConcurrentRunsOfOneEngine(t *testing.T) {
	h := newHarness(t, statusTask)
	const resources, runs = 8, 15
	for i := range resources {
		id := fmt.Sprintf("c%d", i)
		h.api.objects["/clusters/"+id] = map[string]any{"id": id, "generation": 3, "status": map[string]any{"conditions": []any{}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, resources*runs)
	for i := range resources {
		id := fmt.Sprintf("c%d", i)
		wg.Go(func() {
			for range runs {
				ev := map[string]any{"id": id, "kind": "Cluster", "href": "/api/hyperfleet/v1/clusters/" + id, "generation": int64(3)}
				res, err := h.engine.Run(context.Background(), ev)
				if err != nil || res.State.Meta.ExecutionStatus != phase.ExecutionSucceeded {
					errs <- fmt.Errorf("%s: %v %+v", id, err, res.State.Meta.ExecutionError)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h.api.mu.Lock()
	defer h.api.mu.Unlock()
	if len(h.api.puts) != resources*runs {
		t.Fatalf("%d reports, want %d", len(h.api.puts), resources*runs)
	}
	for _, p := range h.api.puts {
		data, _ := p["data"].(map[string]any)
		if data["missing"] != "fallback" || data["region"] != "eu-west-1" || data["tier"] != "eu" {
			t.Errorf("report data = %v", data)
			break
		}
	}
}

// BenchmarkRun is one full run (params, a precondition GET, two resources
// on the in-memory transport, the status PUT) against a loopback API.
func BenchmarkRun(b *testing.B) {
	h := newHarness(b, statusTask)
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.engine.Run(context.Background(), event); err != nil {
			b.Fatal(err)
		}
	}
}

// watchingTransport is a transport that says it watches what it applies.
type watchingTransport struct{ *memory.Transport }

func (watchingTransport) Watches() bool { return true }

// The workflow backs off longer only for an adapter whose every resource
// goes through a transport that watches: nothing else would wake it.
func TestWatchesResources(t *testing.T) {
	if newHarness(t, statusTask).engine.WatchesResources() {
		t.Error("a transport that does not watch: WatchesResources = true")
	}
	watching := func(o *Options) {
		o.Transports = map[string]transport.Transport{"kubernetes": watchingTransport{memory.New(nil)}}
	}
	if !newHarness(t, statusTask, watching).engine.WatchesResources() {
		t.Error("every resource's transport watches: WatchesResources = false")
	}
	noResources := "params:\n  - name: clusterId\n    source: event.id\n    required: true\n"
	if newHarness(t, noResources, watching).engine.WatchesResources() {
		t.Error("no resources: WatchesResources = true")
	}
}
