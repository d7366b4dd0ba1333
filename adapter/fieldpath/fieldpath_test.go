package fieldpath

import (
	"encoding/json"
	"testing"
)

func TestGet(t *testing.T) {
	var data any
	_ = json.Unmarshal([]byte(`{"name":"c1","generation":3,"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Available","status":"False"}]},
		"items":[{"adapter":"landing-zone","data":{"namespace":{"status":"Active"}}},{"adapter":"validation","data":{}},{"adapter":"dns","data":{"namespace":{"status":"Pending"}}}],
		"empty":null}`), &data)
	tests := []struct {
		path  string
		want  string
		found bool
	}{
		{"name", `"c1"`, true},
		{"generation", `3`, true},
		{"status.conditions[1].type", `"Available"`, true},
		{"status.conditions.0.status", `"True"`, true},
		{"status.missing", `null`, false},
		{"status.conditions[9].type", `null`, false},
		{"empty", `null`, true},
		{"{.items[?(@.adapter=='landing-zone')].data.namespace.status}", `"Active"`, true},
		{"{.items[?(@.adapter=='nobody')].data.namespace.status}", `null`, false},
		{"{.items[*].adapter}", `["landing-zone","validation","dns"]`, true},
		{"{.items[?(@.adapter=='validation')].data.namespace.status}", `null`, false},
		{"$.status.conditions[0].type", `"Ready"`, true},
		{"{.status.conditions[?(@.type=='Ready')].status}", `"True"`, true},
	}
	for _, tc := range tests {
		got, found, err := Get(data, tc.path)
		if err != nil {
			t.Errorf("Get(%s): %v", tc.path, err)
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != tc.want || found != tc.found {
			t.Errorf("Get(%s) = %s, %v; want %s, %v", tc.path, b, found, tc.want, tc.found)
		}
	}
}

func TestValidate(t *testing.T) {
	for path, ok := range map[string]bool{
		"name": true, "a.b[0].c": true, "{.items[*].x}": true, "$.a": true,
		"": false, "a..b": false, "a[0": false, "{.items[?(@.x=='y'}": false, "a[]": false,
	} {
		if err := Validate(path); (err == nil) != ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", path, err, ok)
		}
	}
}
