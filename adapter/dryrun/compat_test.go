package dryrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/internal/compat"
)

// Upstream HyperFleet's dry-run fixtures (internal/compat), run as shipped.
var examples = compat.Path("upstream-adapter-examples")

var at = time.Date(2026, 2, 18, 11, 0, 0, 0, time.UTC)

func load(t *testing.T, adapter, task string) *taskconfig.Bundle {
	t.Helper()
	af := ""
	if adapter != "" {
		af = filepath.Join(examples, adapter)
	}
	b, problems := taskconfig.Load(af, filepath.Join(examples, task), taskconfig.Options{})
	if err := problems.Err(); err != nil {
		t.Fatalf("compat fixtures in %s: %v", examples, err)
	}
	return b
}

func run(t *testing.T, b *taskconfig.Bundle, responses, discovery string) *Report {
	t.Helper()
	in := Inputs{EventFile: filepath.Join(examples, "adapter-dryrun", "event.json"), APIResponsesFile: responses, DiscoveryFile: discovery, Now: at, Env: map[string]string{}}
	rep, err := Run(context.Background(), b, in)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func ops(st *executor.State) string {
	var out []string
	for _, s := range st.Trace.Resources.Steps {
		out = append(out, s.Name+"="+string(s.Operation))
	}
	return strings.Join(out, " ")
}

func payload(t *testing.T, st *executor.State, name string) map[string]any {
	t.Helper()
	for _, p := range st.Trace.Post.Payloads {
		if p.Name == name && p.Built {
			return p.Payload
		}
	}
	t.Fatalf("payload %s not built: %+v", name, st.Trace.Post.Payloads)
	return nil
}

func conditions(p map[string]any) string {
	var out []string
	for _, c := range p["conditions"].([]any) {
		m := c.(map[string]any)
		out = append(out, m["type"].(string)+"="+m["status"].(string))
	}
	return strings.Join(out, " ")
}

var apiResponses = filepath.Join(examples, "adapter-dryrun", "dryrun-api-responses.json")

func TestCompatKubernetesExample(t *testing.T) {
	compat.Require(t, "that the upstream Kubernetes adapter example dry-runs to the expected requests and status")
	b := load(t, "adapter-kubernetes/adapter-config.yaml", "adapter-kubernetes/adapter-task-config.yaml")
	rep := run(t, b, apiResponses, filepath.Join(examples, "adapter-kubernetes", "dryrun-discovery.json"))
	// The discovery file holds both objects at the rendered generation (77):
	// the cluster already has them, so the adapter skips both.
	if rep.Result != "SUCCESS" || ops(rep.State) != "namespace=SKIP helloWorldJob=SKIP" {
		t.Fatalf("result %s, ops %s", rep.Result, ops(rep.State))
	}
	// The discovered Job is Complete: the comments' Available=True path.
	p := payload(t, rep.State, "clusterStatusPayload")
	if got := conditions(p); got != "Applied=True Available=True Health=True Finalized=False" {
		t.Errorf("conditions = %s", got)
	}
	if rep.State.Trace.Post.Actions[0].Outcome != executor.ActionExecuted || rep.State.Trace.Post.Actions[1].Outcome != executor.ActionSkipped {
		t.Errorf("actions = %+v", rep.State.Trace.Post.Actions)
	}
	// The job came through manifest.ref /etc/adapter/job.yaml, resolved to
	// adapter-task-resource-job.yaml beside the task config.
	if b.RefFiles["/etc/adapter/job.yaml"] == "" || !strings.HasSuffix(b.RefFiles["/etc/adapter/job.yaml"], "adapter-task-resource-job.yaml") {
		t.Errorf("ref resolution = %v", b.RefFiles)
	}
}

func TestCompatMaestroExample(t *testing.T) {
	compat.Require(t, "that the upstream Maestro adapter example dry-runs to the expected ManifestWork and status")
	b := load(t, "adapter-maestro/adapter-config.yaml", "adapter-maestro/adapter-task-config.yaml")
	rep := run(t, b, apiResponses, filepath.Join(examples, "adapter-maestro", "dryrun-discovery.json"))
	if rep.Result != "SUCCESS" {
		t.Fatalf("result %s: %+v", rep.Result, rep.State.Meta)
	}
	p := payload(t, rep.State, "clusterStatusPayload")
	if got := conditions(p); got != "Applied=True Available=True Health=True Finalized=False" {
		t.Errorf("conditions = %s", got)
	}
	ns := p["data"].(map[string]any)["namespace"].(map[string]any)
	if ns["phase"] != "Active" || ns["name"] != "abc123-mw" {
		t.Errorf("nested discovery data = %v", ns)
	}
	if rep.State.Trace.Resources.Steps[0].Target != "cluster1" {
		t.Errorf("target = %q", rep.State.Trace.Resources.Steps[0].Target)
	}
}

// The delete fixture as shipped (no deleted_time) creates; with deleted_time
// and both objects present it deletes the ConfigMap, then the Namespace that
// waits for it, in the same run, and reports Finalized=True.
func TestCompatKubernetesDeleteFixture(t *testing.T) {
	compat.Require(t, "that the upstream delete dry-run fixture behaves as upstream documents")
	b := load(t, "", "adapter-dryrun/dryrun-kubernetes-delete-task-config.yaml")
	rep := run(t, b, apiResponses, "")
	if rep.Result != "SUCCESS" || ops(rep.State) != "configmap0=CREATE namespace0=CREATE" {
		t.Fatalf("not deleting: %s %s", rep.Result, ops(rep.State))
	}
	// An object the discovery file does not list does not exist: with one
	// listed at another generation, it is updated.
	dir0 := t.TempDir()
	existing := filepath.Join(dir0, "discovery.json")
	writeJSON(t, existing, map[string]any{"abc123": map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "abc123", "annotations": map[string]any{"hyperfleet.io/generation": "4"}}}})
	rep = run(t, b, apiResponses, existing)
	if ops(rep.State) != "configmap0=CREATE namespace0=UPDATE" {
		t.Errorf("with an existing namespace: %s", ops(rep.State))
	}

	dir := t.TempDir()
	var responses map[string]any
	raw, _ := os.ReadFile(apiResponses)
	json.Unmarshal(raw, &responses)
	body := responses["responses"].([]any)[0].(map[string]any)["responses"].([]any)[0].(map[string]any)["body"].(map[string]any)
	body["deleted_time"] = "2026-02-18T10:59:00Z"
	deleting := filepath.Join(dir, "api.json")
	writeJSON(t, deleting, responses)
	discovery := filepath.Join(dir, "discovery.json")
	writeJSON(t, discovery, map[string]any{
		"abc123-config": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "abc123-config", "namespace": "abc123"}},
		"abc123":        map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "abc123"}, "status": map[string]any{"phase": "Active"}},
	})
	rep = run(t, b, deleting, discovery)
	if ops(rep.State) != "configmap0=DELETE namespace0=DELETE" {
		t.Errorf("deleting: %s", ops(rep.State))
	}
	if got := conditions(payload(t, rep.State, "statusPayload")); got != "Health=True Finalized=True" {
		t.Errorf("deleting conditions = %s", got)
	}
}

// The CEL showcase: as shipped, its API mock lacks spec.tags and
// spec.node_pools, so the optional params fall back and the payload's
// firstNodePoolName[0] fails, which the trace names. With a complete mock
// every pattern evaluates.
func TestCompatCELShowcase(t *testing.T) {
	compat.Require(t, "that the upstream CEL showcase evaluates as upstream documents")
	b := load(t, "", "adapter-dryrun/dryrun-cel-showcase-task-config.yaml")
	rep := run(t, b, apiResponses, "")
	if rep.Result != "FAILED" || !strings.Contains(rep.PostErr, "data.lists.first_pool") {
		t.Errorf("as shipped: %s / %s", rep.Result, rep.PostErr)
	}

	dir := t.TempDir()
	var responses map[string]any
	raw, _ := os.ReadFile(apiResponses)
	json.Unmarshal(raw, &responses)
	body := responses["responses"].([]any)[0].(map[string]any)["responses"].([]any)[0].(map[string]any)["body"].(map[string]any)
	body["spec"].(map[string]any)["tags"] = []any{"production", "ha", "production"}
	body["spec"].(map[string]any)["node_pools"] = []any{map[string]any{"name": "big", "replicas": 5}, map[string]any{"name": "small", "replicas": 1}}
	body["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Reconciled", "status": "False", "last_transition_time": "2026-02-18T10:00:00Z"}}}
	full := filepath.Join(dir, "api.json")
	writeJSON(t, full, responses)
	rep = run(t, b, full, "")
	if rep.Result != "SUCCESS" {
		t.Fatalf("complete mock: %s / %s", rep.Result, rep.PostErr)
	}
	data := payload(t, rep.State, "statusPayload")["data"].(map[string]any)
	lists := data["lists"].(map[string]any)
	for k, want := range map[string]any{
		"unique_tags": `["production","ha"]`, "sorted_tags": `["ha","production"]`, "first_pool": "big",
		"condition_summary": `["Reconciled","False"]`, "pools_by_replicas": `["small","big"]`,
	} {
		if lists[k] != want {
			t.Errorf("lists.%s = %v, want %v", k, lists[k], want)
		}
	}
	for k, want := range map[string]any{"reconciled_status": "False", "reconciled_age_seconds": int64(3600), "is_reconciled_stable": false, "health_status": "False"} {
		if data[k] != want {
			t.Errorf("data.%s = %#v, want %#v", k, data[k], want)
		}
	}
	if data["configmap"].(map[string]any)["cluster_id"] != "abc123" || data["cluster_url"] != "https://console.us-east-1.hyperfleet.io/clusters/abc123" {
		t.Errorf("dig/template data = %v", data)
	}
}

func TestInputErrors(t *testing.T) {
	compat.Require(t, "that dry-run input errors are reported, using the upstream dry-run fixtures")
	b := load(t, "", "adapter-dryrun/dryrun-kubernetes-delete-task-config.yaml")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"responses":[{"match":{"method":"GET","urlPattern":"("},"responses":[{}]}]}`), 0o644)
	noID := filepath.Join(dir, "noid.json")
	os.WriteFile(noID, []byte(`{"kind":"Cluster"}`), 0o644)
	textGeneration := filepath.Join(dir, "textgen.json")
	os.WriteFile(textGeneration, []byte(`{"id":"c1","kind":"Cluster","generation":"2"}`), 0o644)
	for name, in := range map[string]Inputs{
		"no event":         {},
		"event without id": {EventFile: noID},
		"text generation":  {EventFile: textGeneration},
		"bad regex":        {EventFile: filepath.Join(examples, "adapter-dryrun", "event.json"), APIResponsesFile: bad},
		"missing file":     {EventFile: filepath.Join(dir, "nope.json")},
	} {
		if _, err := Run(context.Background(), b, in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, _ := json.Marshal(v)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
