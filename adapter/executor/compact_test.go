package executor

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompactKeepsWhatPhasesReadAndDropsBodies(t *testing.T) {
	st := NewState(map[string]any{"id": "c1", "generation": int64(2)})
	st.Vars["getCluster"] = map[string]any{"name": "prod", "generation": int64(2)}
	st.Resources["ns"] = map[string]any{
		"metadata": map[string]any{"name": "c1", "managedFields": []any{map[string]any{"manager": "hyperfleet"}}},
		"status":   map[string]any{"phase": "Active"},
	}
	st.Resources["work"] = map[string]any{"nested": []any{map[string]any{
		"metadata": map[string]any{"name": "inner", "managedFields": []any{"x"}}}}}
	st.Trace.Preconditions.Steps = []PreconditionStep{{Name: "getCluster",
		Call: &Call{Method: "GET", URL: "/clusters/c1", StatusCode: 200, ResponseBody: map[string]any{"big": "body"}}}}
	st.Trace.Resources.Steps = []ResourceStep{{Name: "ns", Manifest: map[string]any{"kind": "Namespace"}}}
	st.Trace.Post.Actions = []ActionStep{{Name: "report", Call: &Call{Method: "PUT", RequestBody: map[string]any{"adapter": "a"}}}}

	st.Compact()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, gone := range []string{"managedFields", `"big"`, `"response_body"`, `"request_body"`, `"manifest"`} {
		if strings.Contains(s, gone) {
			t.Errorf("compacted state still holds %s: %s", gone, s)
		}
	}
	for _, kept := range []string{`"phase":"Active"`, `"name":"prod"`, `"status_code":200`, `"name":"inner"`} {
		if !strings.Contains(s, kept) {
			t.Errorf("compacted state lost %s: %s", kept, s)
		}
	}
}
