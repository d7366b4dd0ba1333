package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// What the API writes, and what PostgreSQL's jsonb gives back for it.
const (
	conditionsAsWritten = `[{"type":"Ready","status":"True","reason":"AllAdaptersReady","message":"all 2 adapters report Available","observed_generation":3,"created_time":"2026-11-23T17:04:05.123456Z","last_updated_time":"2026-11-23T17:04:06Z","last_transition_time":"2026-11-23T17:04:05.5+01:00"},{"type":"Available","status":"False","observed_generation":2,"created_time":"2026-11-23T17:04:05Z","last_updated_time":"2026-11-23T17:04:05Z","last_transition_time":"2026-11-23T17:04:05Z"}]`
	conditionsFromJSONB = `[{"type": "Ready", "reason": "AllAdaptersReady", "status": "True", "message": "all 2 adapters report Available", "created_time": "2026-11-23T17:04:05.123456Z", "last_updated_time": "2026-11-23T17:04:06Z", "observed_generation": 3, "last_transition_time": "2026-11-23T17:04:05.5+01:00"}, {"type": "Available", "status": "False", "created_time": "2026-11-23T17:04:05Z", "last_updated_time": "2026-11-23T17:04:05Z", "observed_generation": 2, "last_transition_time": "2026-11-23T17:04:05Z"}]`
)

func TestStoredDocumentsDecodeAsEncodingJSONDoes(t *testing.T) {
	for _, c := range []struct {
		name, labels, conditions string
		fast                     bool // the reflection-free path takes it
	}{
		{"as written", `{"env":"prod","shard":"3"}`, conditionsAsWritten, true},
		{"as jsonb returns it", `{"env": "prod", "shard": "3"}`, conditionsFromJSONB, true},
		{"empty", `{}`, `[]`, true},
		{"non-ASCII", `{"région":"évry ✓"}`, `[{"type":"Ready","status":"True","message":"déjà"}]`, true},
		{"escapes", `{"a":"line\nbreak","b":"\u00e9"}`, `[{"type":"Ready","status":"True","message":"say \"hi\""}]`, false},
		{"null documents", `null`, `null`, false},
		{"null field", `{}`, `[{"type":"Ready","status":null}]`, false},
		{"a key in another case", `{}`, `[{"Type":"Ready"}]`, false},
		{"an unknown key", `{}`, `[{"type":"Ready","extra":1}]`, false},
		{"an exponent", `{}`, `[{"type":"Ready","observed_generation":1e2}]`, false},
		{"a time without zone", `{}`, `[{"type":"Ready","created_time":"2026-11-23T17:04:05"}]`, false},
		{"a lowercase t in the time", `{}`, `[{"type":"Ready","created_time":"2026-11-23t17:04:05Z"}]`, false},
		{"a leap day, and nanoseconds", `{}`, `[{"type":"Ready","created_time":"2024-02-29T23:59:59.000000001Z","last_updated_time":"0000-01-01T00:00:00.1Z"}]`, true},
		{"February 30", `{}`, `[{"type":"Ready","created_time":"2026-02-30T00:00:00Z"}]`, false},
		{"second 60", `{}`, `[{"type":"Ready","created_time":"2026-01-01T00:00:60Z"}]`, false},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "[{\"type\":\"\xff\"}]", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wantLabels map[string]string
			var wantConds []resource.Condition
			if err := json.Unmarshal([]byte(c.labels), &wantLabels); err != nil {
				t.Fatal(err)
			}
			// encoding/json may refuse a condition list: so must the decoder.
			wantErr := json.Unmarshal([]byte(c.conditions), &wantConds)
			if _, ok := scanLabels([]byte(c.labels)); ok != c.fast && c.labels != "{}" {
				t.Errorf("labels on the fast path: %v, want %v", ok, c.fast)
			}
			if _, ok := scanConditions([]byte(c.conditions)); ok != c.fast && c.conditions != "[]" {
				t.Errorf("conditions on the fast path: %v, want %v", ok, c.fast)
			}
			labels, err := decodeLabels([]byte(c.labels))
			if err != nil || !reflect.DeepEqual(labels, wantLabels) {
				t.Errorf("labels = %v, %v; want %v", labels, err, wantLabels)
			}
			conds, err := decodeConditions([]byte(c.conditions))
			if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(conds, wantConds) {
				t.Errorf("conditions = %+v, %v; want %+v, %v", conds, err, wantConds, wantErr)
			}
		})
	}
	// Broken documents are errors, as before.
	for _, bad := range []string{``, `{`, `{"a":1}`, `[{"type":"Ready"`, `[1]`, `{"a":"b"} x`} {
		if _, err := decodeLabels([]byte(bad)); err == nil {
			t.Errorf("decodeLabels(%q) accepted it", bad)
		}
		if _, err := decodeConditions([]byte(bad)); err == nil {
			t.Errorf("decodeConditions(%q) accepted it", bad)
		}
	}
}

// Whatever the bytes, the fast path either declines or agrees with
// encoding/json exactly.
func FuzzScanStoredDocuments(f *testing.F) {
	f.Add([]byte(conditionsAsWritten))
	f.Add([]byte(conditionsFromJSONB))
	f.Add([]byte(`{"env": "prod", "shard": "3"}`))
	f.Add([]byte(`[{"observed_generation":-0,"created_time":"0000-01-01T00:00:00.000000000-23:59"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, ok := scanLabels(b); ok {
			var want map[string]string
			if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("labels %q: fast %v, encoding/json %v (%v)", b, got, want, err)
			}
		}
		if got, ok := scanConditions(b); ok {
			var want []resource.Condition
			if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("conditions %q: fast %+v, encoding/json %+v (%v)", b, got, want, err)
			}
		}
	})
}

func BenchmarkDecodeStoredConditions(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   func([]byte) error
	}{
		{"scan", func(d []byte) error { _, err := decodeConditions(d); return err }},
		{"encoding-json", func(d []byte) error { var c []resource.Condition; return json.Unmarshal(d, &c) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := []byte(conditionsFromJSONB)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.fn(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
