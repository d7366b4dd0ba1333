package request

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/statusreport"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		body  string
		field string // field named by the error, "" for none
		msg   string // part of the detail; empty = success
	}{
		{`{"kind":"Cluster","name":"a","spec":{}}`, "", ""},
		{``, "", "empty"},
		{`   `, "", "empty"},
		{`[]`, "", "must be a JSON object"},
		{`"x"`, "", "must be a JSON object"},
		{`{"kind":"Cluster",}`, "", "not valid JSON"},
		{`{"kind":"Cluster"`, "", "ends in the middle"},
		{`{"kind":"Cluster","nmae":"a"}`, "nmae", `unknown field "nmae"`},
		{`{"kind":5}`, "kind", "kind: expected a string, got number"},
		{`{"labels":{"a":1}}`, "labels", "expected a string"},
		{`{"labels":[]}`, "labels", "expected an object"},
		{`{"kind":"Cluster"} {"kind":"Cluster"}`, "", "more than one JSON value"},
		{`{"kind":"Cluster"} x`, "", "more than one JSON value"},
	}
	for _, tc := range tests {
		var req lifecycle.CreateRequest
		p := Decode([]byte(tc.body), &req)
		if tc.msg == "" {
			if p != nil {
				t.Errorf("Decode(%q) = %v", tc.body, p)
			}
			continue
		}
		if p == nil {
			t.Errorf("Decode(%q) accepted", tc.body)
			continue
		}
		if p.Status != http.StatusBadRequest || p.Code != problem.CodeMalformedBody {
			t.Errorf("Decode(%q) = %d %s", tc.body, p.Status, p.Code)
		}
		if !strings.Contains(p.Detail, tc.msg) {
			t.Errorf("Decode(%q) detail %q does not contain %q", tc.body, p.Detail, tc.msg)
		}
		if tc.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tc.field) {
			t.Errorf("Decode(%q) errors = %+v, want field %s", tc.body, p.Errors, tc.field)
		}
	}
}

// TestDecodeStrict covers what encoding/json alone would accept quietly.
func TestDecodeStrict(t *testing.T) {
	deep := func(n int) string {
		return `{"kind":"Cluster","name":"abc","spec":` + strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n) + `}`
	}
	tests := []struct {
		body  string
		field string
		msg   string // accepted when empty
	}{
		{deep(MaxDepth - 1), "", ""},
		{deep(MaxDepth), "spec", "more than 32 levels deep"},
		{deep(5000), "spec", "the limit is 32"},
		{`{"spec":{"a":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}}`, "spec", "levels deep"},
		{`{"name":"a","name":"b"}`, "name", "name appears twice"},
		{`{"spec":{"x":{"y":1,"y":2}}}`, "spec.x.y", "appears twice"},
		{`{"labels":{"a":"1","a":"1"}}`, "labels.a", "appears twice"},
		{`{"spec":{"a":1,"A":2}}`, "", ""}, // spec keys are data: case matters, both kept
		{`{"Name":"abc"}`, "Name", `case-sensitive, use "name"`},
		{`{"KIND":"Cluster"}`, "KIND", `use "kind"`},
		{"{\"\u212aind\":\"Cluster\"}", "\u212aind", `use "kind"`}, // Kelvin sign folds to k
		{`{"nmae":"abc"}`, "nmae", `unknown field "nmae"`},
		{"{\"spec\":{\"a\":\"\xff\"}}", "spec.a", "not valid UTF-8"},
		{"{\"spec\":{\"\xc3\":1}}", "spec", "a key of spec is not valid UTF-8"},
		{`{"spec":{"a":"\ud800"}}`, "spec.a", "lone high surrogate"},
		{`{"spec":{"a":"\udc00x"}}`, "spec.a", "lone low surrogate"},
		{`{"spec":{"a":"\ud83d\ude00 \\u0000"}}`, "", ""}, // a pair, and an escaped backslash
		{`{"spec":{"a":["\u0000"]}}`, "spec.a[0]", "NUL"},
		{`{"labels":{"env":null}}`, "labels.env", "labels.env must be a string, not null"},
		{`{"labels":null}`, "", ""},
		{`{"spec":{"a":null}}`, "", ""},
	}
	for _, tc := range tests {
		var req lifecycle.CreateRequest
		p := Decode([]byte(tc.body), &req)
		if tc.msg == "" {
			if p != nil {
				t.Errorf("Decode(%q) = %v", tc.body, p)
			}
			continue
		}
		if p == nil {
			t.Errorf("Decode(%q) accepted", tc.body)
			continue
		}
		if p.Status != http.StatusBadRequest || p.Code != problem.CodeMalformedBody || !strings.Contains(p.Detail, tc.msg) {
			t.Errorf("Decode(%.80q) = %d %s %q, want 400 containing %q", tc.body, p.Status, p.Code, p.Detail, tc.msg)
		}
		if len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
			t.Errorf("Decode(%.80q) errors = %+v, want field %s", tc.body, p.Errors, tc.field)
		}
	}
	// Status reports: conditions are structs too.
	_, p := DecodeStatusReport([]byte(`{"adapter":"a","conditions":[{"type":"A","Status":"True"}]}`))
	if p == nil || len(p.Errors) != 1 || p.Errors[0].Field != "conditions[0].Status" {
		t.Errorf("case-insensitive condition field: %v", p)
	}
	_, p = DecodeStatusReport([]byte(`{"adapter":"a","data":{"k":1,"k":2}}`))
	if p == nil || p.Errors[0].Field != "data.k" {
		t.Errorf("duplicate key in data: %v", p)
	}
}

func TestDecodeStatusReport(t *testing.T) {
	r, p := DecodeStatusReport([]byte(`{"adapter":"a","observed_generation":2,"observed_time":"2025-01-01T10:00:00Z",
		"conditions":[{"type":"Available","status":"True"}],"data":{"k":1}}`))
	if p != nil {
		t.Fatal(p)
	}
	if r.Adapter != "a" || r.ObservedGeneration != 2 || !r.ObservedTime.Equal(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)) || string(r.Data) != `{"k":1}` {
		t.Errorf("report = %+v", r)
	}
	for body, field := range map[string]string{
		`{"observed_time":"yesterday"}`:    "observed_time",
		`{"observed_generation":"2"}`:      "observed_generation",
		`{"observed_generation":1.5}`:      "observed_generation",
		`{"conditions":{"type":"x"}}`:      "conditions",
		`{"conditions":[{"status":true}]}`: "conditions.status",
	} {
		_, p := DecodeStatusReport([]byte(body))
		if p == nil || len(p.Errors) == 0 || p.Errors[0].Field != field {
			t.Errorf("DecodeStatusReport(%s) = %v, want an error naming %s", body, p, field)
		}
	}
}

func TestReadBody(t *testing.T) {
	req := httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	if _, p := ReadBody(req, 10); p == nil || p.Status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %v", p)
	}
	req = httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // curl -d
	if _, p := ReadBody(req, 10); p != nil {
		t.Errorf("curl's default content type refused: %v", p)
	}
	req = httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat(" ", 11)))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if _, p := ReadBody(req, 10); p == nil || p.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("11 bytes over a 10 byte limit: %v", p)
	}
	req = httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	if b, p := ReadBody(req, 10); p != nil || string(b) != "{}" {
		t.Errorf("+json: %q %v", b, p)
	}
}

// FuzzDecodeBodies drives every body the API accepts through decoding and
// validation: any input must produce a value or a 4xx problem, never a
// panic.
func FuzzDecodeBodies(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"Cluster","name":"my-cluster","spec":{},"labels":{"environment":"production"}}`,
		`{"kind":"NodePool","name":"worker-pool","spec":{"replicas":2},"labels":{"role":"worker"}}`,
		`{"spec":{"replicas":3},"labels":{}}`,
		`{"reason":"adapter stuck"}`,
		`{"adapter":"validator","observed_generation":1,"observed_time":"2025-01-01T10:00:00Z","conditions":[{"type":"Available","status":"True"},{"type":"Applied","status":"True"},{"type":"Health","status":"True"}],"data":{"job_name":"x","attempt":1}}`,
		`{"spec":1e999999999}`,
		`{"labels":{"a/b/c":"x"}}`,
		`{"name":"\u0000"}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(p *problem.Problem) {
			if p != nil && (p.Status < 400 || p.Status >= 500) {
				t.Fatalf("status %d for bad input", p.Status)
			}
		}
		var create lifecycle.CreateRequest
		if p := Decode(body, &create); p == nil {
			_ = lifecycle.ValidateCreate("Cluster", &create)
		} else {
			check(p)
		}
		var patch lifecycle.PatchRequest
		if p := Decode(body, &patch); p == nil {
			_ = lifecycle.ValidatePatch(&patch)
			if patch.Spec != nil {
				_ = lifecycle.SameJSON(patch.Spec, json.RawMessage(`{"a":1}`))
			}
		} else {
			check(p)
		}
		var fd lifecycle.ForceDeleteRequest
		if p := Decode(body, &fd); p == nil {
			_ = lifecycle.ValidateForceDelete(&fd)
		}
		if r, p := DecodeStatusReport(body); p == nil {
			_ = statusreport.Validate(r, now)
		} else {
			check(p)
		}
	})
}
