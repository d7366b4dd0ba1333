package api

import (
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// A NUL character in any text value of a search is a 400 naming the field
// on both backends (PostgreSQL answered 500: it refuses NUL in text
// parameters), on every list; a quoted number beyond PostgreSQL's numeric
// is searched as the text it is (it was tried as a jsonb number, a 500).
func TestSearchTextParity(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("parity")
		e.createNodePool(c.ID, "pool")
		text := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"texty","spec":{"x":"1e999999999"}}`).expect(201).resource()
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"numbery","spec":{"x":1e300}}`).expect(201)
		for _, path := range []string{"/clusters", "/nodepools", "/resources"} {
			for field, q := range map[string]string{
				"name":       "name = 'a\x00b'",
				"labels.x":   "labels.x = 'a\x00'",
				"spec.x":     "spec.x = '\x00'",
				"id":         "id = '\x00'",
				"created_by": "created_by = '\x00'",
				"like":       "name like '\x00%'",
				"in":         "name in ('a', '\x00')",
			} {
				p := e.do("GET", base+path+"?search="+urlQuery(q), nil).problem(400, "HYPERFLEET-VAL-004")
				want := strings.Fields(q)[0] + ": the value holds a NUL character"
				if !p.names("search") || !strings.Contains(p.Detail, want) {
					t.Errorf("%s %s: %+v", path, field, p)
				}
			}
		}
		p := e.do("GET", base+"/resources?search="+urlQuery("kind = 'Cluster\x00'"), nil).problem(400, "HYPERFLEET-VAL-004")
		if !strings.Contains(p.Detail, "kind: the value holds a NUL") {
			t.Errorf("kind: %+v", p)
		}
		for q, want := range map[string]string{
			"spec.x = '1e999999999'":                 text.ID,
			"spec.x in ('1e999999999', '2e-999')":    text.ID,
			"spec.x != '1e999999999' and name = 'x'": "",
		} {
			var l resource.List[resource.Resource]
			e.do("GET", base+"/clusters?search="+urlQuery(q), nil).expect(200).into(&l)
			got := ""
			if len(l.Items) == 1 {
				got = l.Items[0].ID
			}
			if got != want || len(l.Items) > 1 {
				t.Errorf("%s: matched %d items (%s), want %q", q, len(l.Items), got, want)
			}
		}
	})
}
