package lifecycle

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSameJSON(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{}`, `{ }`, true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`{"a":1}`, `{"a":1.0}`, true},
		{`{"a":1e2}`, `{"a":100}`, true},
		{`{"a":9.007199254740993e15}`, `{"a":9007199254740992}`, false},
		{`{"a":0}`, `{"a":2e-400}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":{"b":null}}`, `{"a":{}}`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":12345678901234567890}`, `{"a":12345678901234567891}`, false},
		{`{"a":1e999999999}`, `{"a":2e999999999}`, false}, // huge exponents: no exact big.Rat, no huge allocation
		{`{"a":1e999999999}`, `{"a":1e999999999}`, true},
		{`{"a":true}`, `{"a":true}`, true},
		{`{"a":[]}`, `{"a":{}}`, false},
	}
	for _, tc := range tests {
		if got := SameJSON(json.RawMessage(tc.a), json.RawMessage(tc.b)); got != tc.same {
			t.Errorf("SameJSON(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestValidateCreate(t *testing.T) {
	ok := CreateRequest{Kind: "NodePool", Name: "pool-1", Spec: json.RawMessage(`{}`), Labels: map[string]string{"hyperfleet.io/role": "worker", "empty": ""}}
	if errs := ValidateCreate("NodePool", &ok); len(errs) != 0 {
		t.Fatalf("valid node pool rejected: %+v", errs)
	}
	bad := CreateRequest{Kind: "Cluster", Name: strings.Repeat("n", 16), Spec: json.RawMessage(`[]`), Labels: map[string]string{"a b": "c", "k": "bad value"}}
	var fields []string
	for _, e := range ValidateCreate("NodePool", &bad) {
		fields = append(fields, e.Field)
		if e.Message == "" || e.Constraint == "" {
			t.Errorf("error %+v lacks a message or constraint", e)
		}
	}
	if strings.Join(fields, ",") != "kind,name,spec,labels.a b,labels.k" {
		t.Errorf("fields = %v", fields)
	}
}

func TestValidateForceDelete(t *testing.T) {
	for reason, valid := range map[string]bool{"": false, "  ": false, "x": true, strings.Repeat("é", 1024): true, strings.Repeat("é", 1025): false} {
		if got := len(ValidateForceDelete(&ForceDeleteRequest{Reason: reason})) == 0; got != valid {
			t.Errorf("reason of %d runes: valid = %v, want %v", len([]rune(reason)), got, valid)
		}
	}
}

// countValues counts what the search index keeps a row for: strings,
// numbers and booleans that are values, at any depth; not keys, nulls or
// empty containers.
func TestCountValues(t *testing.T) {
	for doc, want := range map[string]int{
		`{}`:                                  0,
		`{"a":1,"b":"x","c":true,"d":null}`:   3,
		`{"a":{"b":{"c":[1,2,{"d":"e"}]}}}`:   3,
		`{"k":"v","o":{},"l":[],"n":[null]}`:  1,
		`{"a":[[1,2],[3,[4,{"x":false}]]]}`:   5,
		`{"key-only-strings":{"x":{"y":{}}}}`: 0,
		`{"a":1,"b":`:                         1, // what it read before the error
	} {
		if got := countValues([]byte(doc)); got != want {
			t.Errorf("countValues(%s) = %d, want %d", doc, got, want)
		}
	}
}
