package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestCompactKeepsWhatPhasesReadAndDropsBodies(t *testing.T) {
	st := newState(resource.Event{ID: "c1", Generation: 2})
	st.Vars["getCluster"] = map[string]any{"name": "prod", "generation": int64(2)}
	st.Resources["ns"] = map[string]any{
		"metadata": map[string]any{"name": "c1", "managedFields": []any{map[string]any{"manager": "hyperfleet"}}},
		"status":   map[string]any{"phase": "Active"},
	}
	st.Resources["work"] = map[string]any{"nested": []any{map[string]any{
		"metadata": map[string]any{"name": "inner", "managedFields": []any{"x"}}}}}
	st.Trace.Params.Steps = []ParamStep{{Name: "clusterId", Source: "event.id", Value: "param-value"}}
	st.Trace.Preconditions.Steps = []PreconditionStep{{Name: "getCluster", Outcome: StepPass,
		Call:       &Call{Method: "GET", URL: "/clusters/c1", StatusCode: 200, ResponseBody: map[string]any{"big": "body"}},
		Captures:   []Captured{{Name: "clusterName", Value: "captured-value"}},
		Conditions: []ConditionEval{{Field: "clusterName", Operator: "exists", Actual: "actual-value", Result: true}}}}
	st.Trace.Post.Payloads = []PayloadStep{{Name: "status", Built: true, Payload: map[string]any{"payload": "built-payload"}}}
	st.Trace.Resources.Steps = []ResourceStep{{Name: "ns", Manifest: map[string]any{"kind": "Namespace"}}}
	st.Trace.Post.Actions = []ActionStep{{Name: "report", Call: &Call{Method: "PUT", RequestBody: map[string]any{"adapter": "a"}}}}

	st.Compact()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, gone := range []string{"managedFields", `"big"`, `"response_body"`, `"request_body"`, `"manifest"`,
		"param-value", "captured-value", "actual-value", "built-payload"} {
		if strings.Contains(s, gone) {
			t.Errorf("compacted state still holds %s: %s", gone, s)
		}
	}
	for _, kept := range []string{`"phase":"Active"`, `"name":"prod"`, `"status_code":200`, `"name":"inner"`,
		`"name":"clusterId"`, `"name":"clusterName"`, `"result":true`, `"outcome":"PASS"`, `"built":true`} {
		if !strings.Contains(s, kept) {
			t.Errorf("compacted state lost %s: %s", kept, s)
		}
	}
}
