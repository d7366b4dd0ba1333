package resource

import (
	"encoding/json"
	"testing"
	"time"
)

// reflected has Resource's fields and tags but not its MarshalJSON:
// encoding/json's own output for it is what AppendJSON must reproduce.
type reflected Resource

func sample() Resource {
	t := time.Date(2026, 11, 23, 17, 4, 5, 123456000, time.UTC)
	del := t.Add(time.Hour)
	return Resource{
		Kind: KindNodePool, ID: "np-1", Href: NodePoolHref("c-1", "np-1"), Name: "workers",
		OwnerReferences: &OwnerReference{Kind: KindCluster, ID: "c-1", Href: ClusterHref("c-1")},
		References:      []Link{{RefType: "version", Kind: "Version", ID: "v1", Href: "/x/v1"}},
		Generation:      7,
		Spec:            json.RawMessage(`{"replicas": 3, "note": "a<b & c>d \u2028"}`),
		Labels:          map[string]string{"shard": "3", "env": "prod", "a": "<&>"},
		CreatedTime:     t, UpdatedTime: t.Add(time.Second),
		CreatedBy: "alice", UpdatedBy: "bob", DeletedTime: &del, DeletedBy: "carol",
		Status: Status{Conditions: []Condition{
			{Type: ConditionReady, Status: StatusTrue, Reason: "AllAdaptersReady", Message: "line\nbreak \"quoted\"", ObservedGeneration: 7,
				CreatedTime: t, LastUpdatedTime: t, LastTransitionTime: t},
			{Type: ConditionAvailable, Status: StatusFalse, ObservedGeneration: 6, CreatedTime: t.In(time.FixedZone("x", 3600))},
		}},
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	full := sample()
	for _, c := range []struct {
		name string
		edit func(r *Resource)
	}{
		{"every field set", func(*Resource) {}},
		{"zero resource", func(r *Resource) { *r = Resource{} }},
		{"nil labels and conditions", func(r *Resource) { r.Labels, r.Status.Conditions = nil, nil }},
		{"empty labels and conditions", func(r *Resource) { r.Labels, r.Status.Conditions = map[string]string{}, []Condition{} }},
		{"no owner, references, deletion", func(r *Resource) {
			r.OwnerReferences, r.References, r.DeletedTime, r.DeletedBy = nil, []Link{}, nil, ""
		}},
		{"compact spec", func(r *Resource) { r.Spec = json.RawMessage(`{"a":[1,2,{"b":null}]}`) }},
		{"spec with whitespace and HTML", func(r *Resource) { r.Spec = json.RawMessage("{\n \"a\" : \"<script>\" }") }},
		{"spec with non-ASCII", func(r *Resource) { r.Spec = json.RawMessage(`{"name":"café ✓"}`) }},
		{"strings needing escapes", func(r *Resource) {
			r.Name = "tab\there \x01 \x7f \b\f\r é \u2029 \xff end"
			r.Labels = map[string]string{"k\"ey": "v\\al", "zz": "", "é": "\u2028"}
		}},
		{"many labels", func(r *Resource) {
			r.Labels = map[string]string{}
			for _, k := range []string{"q", "w", "e", "r", "t", "y", "u", "i", "o", "p", "a", "s", "d", "f", "g", "h", "j", "k", "l", "z"} {
				r.Labels[k] = k + k
			}
		}},
		{"negative generation", func(r *Resource) { r.Generation = -5 }},
		{"times in a zero-offset zone other than UTC, with nanoseconds", func(r *Resource) {
			r.CreatedTime = time.Date(2026, 1, 2, 3, 4, 5, 100, time.FixedZone("GMT", 0))
			r.UpdatedTime = time.Date(999, 12, 31, 23, 59, 59, 999999999, time.UTC)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := full
			r.Labels = map[string]string{}
			for k, v := range full.Labels {
				r.Labels[k] = v
			}
			c.edit(&r)
			want, werr := json.Marshal(reflected(r))
			got, gerr := r.AppendJSON(nil)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("AppendJSON error %v, encoding/json error %v", gerr, werr)
			}
			if string(got) != string(want) {
				t.Errorf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
			}
			// json.Marshal goes through MarshalJSON and agrees too.
			viaMarshal, err := json.Marshal(&r)
			if werr == nil && (err != nil || string(viaMarshal) != string(want)) {
				t.Errorf("json.Marshal(&r) = %s, %v", viaMarshal, err)
			}
		})
	}
}

func TestAppendJSONRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(r *Resource)
	}{
		{"invalid spec", func(r *Resource) { r.Spec = json.RawMessage(`{"a":`) }},
		{"empty non-nil spec", func(r *Resource) { r.Spec = json.RawMessage{} }},
		{"year 10000", func(r *Resource) { r.CreatedTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"negative year in a condition", func(r *Resource) {
			r.Status.Conditions[0].LastTransitionTime = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sample()
			r.Status.Conditions = append([]Condition(nil), r.Status.Conditions...)
			c.edit(&r)
			if _, err := json.Marshal(reflected(r)); err == nil {
				t.Fatal("encoding/json accepted it: the case is wrong")
			}
			if b, err := r.AppendJSON(nil); err == nil {
				t.Errorf("AppendJSON accepted it: %s", b)
			}
		})
	}
}

// Any strings, spec and labels: AppendJSON writes what encoding/json writes,
// or fails where it fails.
func FuzzAppendJSON(f *testing.F) {
	f.Add("name", "Ready", "msg <b>", "k", "v", []byte(`{"a":1}`), int64(3), int64(0), int64(0))
	f.Add("\xff\x00", "\u2028", "\"", "", "\t", []byte(" [ 1 , \"<\" ] "), int64(-1), int64(1e18), int64(120000))
	f.Add("é", "x", "", "a b", "c", []byte(`nul`), int64(0), int64(-62135596800), int64(999999999))
	f.Fuzz(func(t *testing.T, name, ctype, message, key, value string, spec []byte, gen, unix, nsec int64) {
		at := time.Unix(unix, nsec).UTC()
		r := Resource{Kind: KindCluster, ID: "id", Name: name, Generation: gen, Spec: spec,
			Labels: map[string]string{key: value, "z" + key: name}, CreatedTime: at,
			Status: Status{Conditions: []Condition{{Type: ctype, Status: StatusTrue, Message: message, LastUpdatedTime: at}}}}
		want, werr := json.Marshal(reflected(r))
		got, gerr := r.AppendJSON(nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("AppendJSON error %v, encoding/json error %v", gerr, werr)
		}
		if werr == nil && string(got) != string(want) {
			t.Fatalf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	r := sample()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = r.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSON(b *testing.B) {
	r := reflected(sample())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(&r); err != nil {
			b.Fatal(err)
		}
	}
}
