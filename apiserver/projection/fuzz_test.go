package projection

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzProject feeds arbitrary fields= values and documents: Parse answers
// with a projection or an *Error, Append never panics, and from a valid
// JSON object it makes a valid JSON object holding only keys of the
// document.
func FuzzProject(f *testing.F) {
	d := doc(f)
	for _, seed := range []struct{ fields, doc string }{
		{"id,name,status.conditions", string(d)},
		{"spec.platform.zones.name,labels.app.kubernetes.io/name", string(d)},
		{"status.conditions.type, spec.replicas", `{"spec":{"replicas":[1,{"x":2}]},"status":{"conditions":null}}`},
		{"owner_references.id,,", `{"owner_references":{"id":"a\"b"}}`},
		{"spec.a.b.c", `{"spec":{"a":{"b":{"c":true,"d":null}}}} `},
		{"nmae", `{}`},
		{"references", `[`},
	} {
		f.Add(seed.fields, []byte(seed.doc))
	}
	f.Fuzz(func(t *testing.T, fields string, doc []byte) {
		p, err := Parse(fields, Resource)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): error of type %T", fields, err)
			}
			return
		}
		out, err := p.Append(nil, doc)
		if err != nil {
			return
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(doc, &in) != nil {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("Append(%q, %q) = %q: not a JSON object: %v", fields, doc, out, err)
		}
		for k := range got {
			if _, ok := in[k]; !ok {
				t.Fatalf("Append(%q, %q) = %q: key %q not in the document", fields, doc, out, k)
			}
		}
	})
}
