package projection

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

// doc is a node pool as the API writes it, every field set.
func doc(t testing.TB) []byte {
	t.Helper()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	deleted := now.Add(time.Hour)
	r := resource.Resource{
		Kind: "NodePool", ID: "0190c0de-0000-7000-8000-000000000002", Href: "/api/hyperfleet/v1/clusters/c/nodepools/n", Name: "workers",
		OwnerReferences: &resource.OwnerReference{Kind: "Cluster", ID: "c", Href: "/api/hyperfleet/v1/clusters/c"},
		References:      []resource.Link{{RefType: "version", Kind: "Version", ID: "v", Href: "/api/hyperfleet/v1/versions/v"}},
		Generation:      3,
		Spec:            json.RawMessage(`{"replicas":9007199254740993,"platform":{"type":"gcp","zones":[{"name":"a","cidr":"10.0.0.0/24"},"b",{"name":"c"}]},"a-b":1}`),
		Labels:          map[string]string{"app.kubernetes.io/name": "web", "role": "worker"},
		Tenancy:         map[string]string{"org": "acme"},
		CreatedTime:     now, UpdatedTime: now, CreatedBy: "alice@example.com", UpdatedBy: "bob@example.com",
		DeletedTime: &deleted, DeletedBy: "carol@example.com",
		Status: resource.Status{Conditions: []resource.Condition{
			{Type: "Ready", Status: "True", Reason: "AllGood", Message: "ok", ObservedGeneration: 3, CreatedTime: now, LastUpdatedTime: now, LastTransitionTime: now},
			{Type: "Reconciled", Status: "False", Message: "waiting", ObservedGeneration: 2, CreatedTime: now, LastUpdatedTime: now, LastTransitionTime: now},
		}},
	}
	b, err := r.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The schema names exactly the fields the encoder writes: a field added
// to resource.Resource must be added here, or fields= could not name it.
func TestSchemaMatchesEncoder(t *testing.T) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc(t), &top); err != nil {
		t.Fatal(err)
	}
	check := func(where string, s *Schema, raw json.RawMessage) {
		t.Helper()
		var obj map[string]json.RawMessage
		if raw[0] == '[' {
			var arr []map[string]json.RawMessage
			if err := json.Unmarshal(raw, &arr); err != nil || len(arr) == 0 {
				t.Fatalf("%s: %s", where, raw)
			}
			obj = arr[0]
		} else if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		var written, schema []string
		for k := range obj {
			written = append(written, k)
		}
		for k := range s.members {
			schema = append(schema, k)
		}
		slices.Sort(written)
		slices.Sort(schema)
		if !slices.Equal(written, schema) {
			t.Errorf("%s: the encoder writes %v, the schema has %v", where, written, schema)
		}
	}
	check("resource", Resource, doc(t))
	for name, s := range Resource.members {
		if s.shape == object {
			check(name, s, top[name])
		}
	}
	var status struct {
		Conditions json.RawMessage `json:"conditions"`
	}
	_ = json.Unmarshal(top["status"], &status)
	check("status.conditions", Resource.members["status"].members["conditions"], status.Conditions)
	for _, name := range strings.Split(topLevel, ", ") {
		if _, ok := Resource.members[name]; !ok {
			t.Errorf("topLevel names %q, which the schema lacks", name)
		}
	}
	if n := len(strings.Split(topLevel, ", ")); n != len(Resource.members) {
		t.Errorf("topLevel names %d fields, the schema %d", n, len(Resource.members))
	}
}

func TestProject(t *testing.T) {
	const ids = `"kind":"NodePool","id":"0190c0de-0000-7000-8000-000000000002","href":"/api/hyperfleet/v1/clusters/c/nodepools/n"`
	for _, tc := range []struct {
		fields, want string
	}{
		{"name", `{` + ids + `,"name":"workers"}`},
		{"id", `{` + ids + `}`},
		{" name , generation ", `{` + ids + `,"name":"workers","generation":3}`},
		{"generation,name", `{` + ids + `,"name":"workers","generation":3}`},
		{"name,name", `{` + ids + `,"name":"workers"}`},
		{"status.conditions.type,status.conditions.status",
			`{` + ids + `,"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Reconciled","status":"False"}]}}`},
		{"status.conditions.reason", `{` + ids + `,"status":{"conditions":[{"reason":"AllGood"},{}]}}`},
		{"status,status.conditions.type", `{` + ids + `,"status":` + string(mustField(t, "status")) + `}`},
		{"spec.replicas", `{` + ids + `,"spec":{"replicas":9007199254740993}}`},
		{"spec.platform.type", `{` + ids + `,"spec":{"platform":{"type":"gcp"}}}`},
		{"spec.platform.zones.name", `{` + ids + `,"spec":{"platform":{"zones":[{"name":"a"},{"name":"c"}]}}}`},
		{"spec.a-b,spec.missing", `{` + ids + `,"spec":{"a-b":1}}`},
		{"spec.replicas.deeper", `{` + ids + `,"spec":{}}`},
		{"labels.app.kubernetes.io/name", `{` + ids + `,"labels":{"app.kubernetes.io/name":"web"}}`},
		{"labels.absent", `{` + ids + `,"labels":{}}`},
		{"tenancy.org", `{` + ids + `,"tenancy":{"org":"acme"}}`},
		{"owner_references.id", `{` + ids + `,"owner_references":{"id":"c"}}`},
		{"references.id", `{` + ids + `,"references":[{"id":"v"}]}`},
		{"deleted_by,created_time", `{` + ids + `,"created_time":"2026-12-01T10:00:00Z","deleted_by":"carol@example.com"}`},
	} {
		p, err := Parse(tc.fields, Resource)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.fields, err)
			continue
		}
		got, err := p.Append(nil, doc(t))
		if err != nil {
			t.Errorf("%q: %v", tc.fields, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.fields, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("%q: invalid JSON %s", tc.fields, got)
		}
	}
}

func mustField(t *testing.T, name string) json.RawMessage {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc(t), &top); err != nil {
		t.Fatal(err)
	}
	return top[name]
}

// A field an item lacks is left out: a cluster has no owner_references.
func TestProjectAbsentField(t *testing.T) {
	p, err := Parse("owner_references,references.id,name", Resource)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Append([]byte("["), []byte(`{"kind":"Cluster","id":"x","href":"/h","name":"n","generation":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"kind":"Cluster","id":"x","href":"/h","name":"n"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		fields, entry, message string
	}{
		{"", "", "empty entry"},
		{"id,,name", "", "empty entry"},
		{"id, ", " ", "empty entry"},
		{"nmae", "nmae", `unknown field "nmae"; the fields are kind, id`},
		{"name,Status", "Status", `unknown field "Status"`},
		{"status.phase", "status.phase", `unknown field "phase" of status; it has conditions`},
		{"status.conditions.kind", "status.conditions.kind", `unknown field "kind" of status.conditions`},
		{"owner_references.name", "owner_references.name", `unknown field "name" of owner_references; it has href, id, kind`},
		{"name.first", "name.first", "name has no fields to select"},
		{"status.conditions.type.x", "status.conditions.type.x", "status.conditions.type has no fields"},
		{"spec.", "spec.", `path segment "" of spec.`},
		{"spec.a..b", "spec.a..b", `path segment ""`},
		{"spec.a b", "spec.a b", `path segment "a b"`},
		{"spec.a[0]", "spec.a[0]", `path segment "a[0]"`},
		{"labels.", "labels.", `"" is not a key of labels`},
		{"labels.a b", "labels.a b", `"a b" is not a key of labels`},
		{"spec" + strings.Repeat(".a", MaxDepth), "spec" + strings.Repeat(".a", MaxDepth), "segments deep; the limit is 16"},
		{strings.Repeat("id,", MaxFields) + "id", "", "entries; the limit is 32"},
		{strings.Repeat("a", MaxLength+1), "", "bytes long; the limit is 1024"},
	} {
		_, err := Parse(tc.fields, Resource)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *Error", tc.fields, err)
			continue
		}
		if !strings.Contains(pe.Message, tc.message) {
			t.Errorf("Parse(%q): message %q, want it to hold %q", tc.fields, pe.Message, tc.message)
		}
		if tc.entry != "" && pe.Entry != tc.entry {
			t.Errorf("Parse(%q): entry %q, want %q", tc.fields, pe.Entry, tc.entry)
		}
		if len(pe.Entry) > 70 {
			t.Errorf("Parse(%q): entry of %d bytes echoed", tc.fields[:20], len(pe.Entry))
		}
	}
}

func TestParseLists(t *testing.T) {
	p, err := Parse("name, status.conditions ,name", Resource)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"name", "status.conditions"}; !slices.Equal(p.Fields, want) {
		t.Errorf("Fields = %v, want %v", p.Fields, want)
	}
}

// Append refuses what is not one JSON object and never writes past what
// it was given on error.
func TestAppendMalformed(t *testing.T) {
	p, err := Parse("name,spec.a", Resource)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		``, `[]`, `"x"`, `{`, `{"name"}`, `{"name":}`, `{"name":"x"`, `{"name":"x",}`, `{"name":"x"}x`,
		`{"spec":{"a":[1,}}`, `{"spec":{"a":"\"}}`, `{"name" "x"}`, `{name:1}`,
		strings.Repeat(`{"spec":`, 100) + "1" + strings.Repeat("}", 100),
	} {
		out, err := p.Append([]byte("prefix"), []byte(in))
		if err == nil {
			t.Errorf("Append(%q) = %s, want an error", in, out)
		}
		if string(out) != "prefix" {
			t.Errorf("Append(%q) left %q", in, out)
		}
	}
	// Space between tokens is fine, and a key with escapes is read as its text.
	out, err := p.Append(nil, []byte(` { "na\u006de" : "x" , "spec" : { "a" : [ 1 , 2 ] } } `))
	if err != nil || string(out) != `{"na\u006de":"x","spec":{"a":[ 1 , 2 ]}}` {
		t.Errorf("Append with spaces = %s, %v", out, err)
	}
}

func BenchmarkProject(b *testing.B) {
	d := doc(b)
	for _, fields := range []string{"id,name,status.conditions", "id,name,status.conditions.type,status.conditions.status", "spec.platform.type"} {
		p, err := Parse(fields, Resource)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fields, func(b *testing.B) {
			var out []byte
			b.SetBytes(int64(len(d)))
			b.ReportAllocs()
			for b.Loop() {
				if out, err = p.Append(out[:0], d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse("id,name,status.conditions", Resource); err != nil {
				b.Fatal(err)
			}
		}
	})
}
