package executor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/memory"
	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
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

func (h *harness) run(t *testing.T, ev resource.Event) (*State, *PostResult, error) {
	t.Helper()
	res, err := h.engine.RunEvent(context.Background(), ev, nil)
	return res.State, res.Post, err
}

var event = resource.Event{ID: "c1", Kind: "Cluster", Href: "/api/hyperfleet/v1/clusters/c1", Generation: 3}

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
			[]string{`resource ns: Namespace "c1" was created, but discovery.by_name "c1-wrong": Namespace not found (no object of that name)`}},
		{"by selectors", "hyperfleet.io/cluster-id: \"{{ .clusterId }}\"\n    lifecycle", "hyperfleet.io/cluster-id: other\n    lifecycle", "cm=CREATE", "cm",
			[]string{`resource cm: ConfigMap "c1-config" was created, but discovery.by_selectors (label_selector hyperfleet.io/cluster-id=other): ConfigMap not found in namespace "c1" (no object with those labels)`}},
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
	st, post, err := h.run(t, resource.Event{ID: "np1", Kind: "NodePool", Generation: 7, OwnerReferences: &resource.OwnerReference{ID: "c9", Kind: "Cluster"}})
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
