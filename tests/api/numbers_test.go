package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/internal/jsonnum"
	"github.com/hyperfleet/hyperfleet/resource"
)

// unstorableNumbers cannot be kept alike on both backends: beyond
// PostgreSQL's numeric (the first four, which made it answer 500), or
// beyond a 64-bit float, which SQLite searches them as.
var unstorableNumbers = map[string]string{
	"huge":              "1e999999999",
	"tiny":              "1e-999999999",
	"60,000 fractional": "0." + strings.Repeat("1", 60000),
	"17,000-digit exp":  "1e" + strings.Repeat("9", 17000),
	"above float64":     "-1e309",
	"below float64":     "2e-400",
}

// A number the backends cannot store alike is a 400 naming its field, on
// create, PATCH and status reports (in data and metadata), on both
// backends; nothing is stored.
func TestUnstorableNumbersAreRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("numbers")
		for name, n := range unstorableNumbers {
			check := func(r *response, field string) {
				t.Helper()
				p := r.problem(400, "HYPERFLEET-VAL-002")
				if len(p.Errors) != 1 || p.Errors[0].Field != field || !strings.Contains(p.Detail, "number") {
					t.Errorf("%s: %s %s: %+v", name, r.method, r.path, p)
				}
				if len(r.body) > 2000 {
					t.Errorf("%s: the problem echoes the number (%d bytes)", name, len(r.body))
				}
			}
			check(e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"num","spec":{"x":`+n+`}}`), "spec.x")
			check(e.do("PATCH", c.Href, `{"spec":{"a":{"x":[1,`+n+`]}}}`), "spec.a.x[1]")
			for _, field := range []string{"data", "metadata"} {
				body, _ := json.Marshal(report("validation", 1, "True"))
				body = bytes.Replace(body, []byte(`{"adapter"`), []byte(`{"`+field+`":{"x":`+n+`},"adapter"`), 1)
				check(e.do("PUT", statusPath(c), string(body)), field+".x")
			}
		}
		var l resource.List[resource.Resource]
		e.do("GET", base+"/clusters", nil).expect(200).into(&l)
		if l.Total != 1 {
			t.Errorf("refused bodies created clusters: %d", l.Total)
		}
		if got := e.getCluster(c.ID); got.Generation != 1 {
			t.Errorf("refused patches moved the generation to %d", got.Generation)
		}
		if sts := e.statuses(c); len(sts) != 0 {
			t.Errorf("refused reports were stored: %+v", sts)
		}
		// The limits themselves are storable.
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"edges","spec":{"a":1.7976931348623157e308,"b":-5e-324,"c":1.`+strings.Repeat("0", 900)+`1e-20}}`).expect(201)
	})
}

// specNumber reads spec[key] of a resource's raw JSON as the literal the
// API returned.
func specNumber(t *testing.T, r *response, key string) string {
	t.Helper()
	var doc struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	r.into(&doc)
	return string(doc.Spec[key])
}

// Numbers are kept and compared exactly as sent: a PATCH that changes one
// beyond float64's precision is applied and bumps the generation; the same
// value spelled differently changes nothing; both backends return the
// value sent.
func TestNumbersComparedExactly(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"exact","spec":{"n":9007199254740993,"z":0}}`).expect(201).resource()
		if got := specNumber(t, e.do("GET", c.Href, nil).expect(200), "n"); got != "9007199254740993" {
			t.Fatalf("stored n = %s", got)
		}
		steps := []struct {
			spec string
			gen  int64
			n, z string
		}{
			{`{"n":9007199254740992,"z":0}`, 2, "9007199254740992", "0"},       // beyond float64 precision
			{`{"n":9.007199254740992e15,"z":0.0}`, 2, "9007199254740992", "0"}, // same values
			{`{"n":9007199254740992,"z":1e-300}`, 3, "9007199254740992", "1e-300"},
			{`{"n":9007199254740992,"z":10e-301}`, 3, "9007199254740992", "1e-300"},
			{`{"n":9007199254740992,"z":0.1000000000000000000000000001}`, 4, "9007199254740992", "0.1000000000000000000000000001"},
			{`{"n":9007199254740992,"z":0.1}`, 5, "9007199254740992", "0.1"},
			// As float64 these are the stored values: compared exactly, not.
			{`{"n":9.007199254740993e15,"z":0.1}`, 6, "9007199254740993", "0.1"},
			{`{"n":9007199254740993,"z":0}`, 7, "9007199254740993", "0"},
		}
		for _, s := range steps {
			r := e.do("PATCH", c.Href, `{"spec":`+s.spec+`}`).expect(200)
			if got := r.resource().Generation; got != s.gen {
				t.Fatalf("PATCH %s: generation %d, want %d", s.spec, got, s.gen)
			}
			get := e.do("GET", c.Href, nil).expect(200)
			// PostgreSQL writes numbers in plain decimal (1e-300 as
			// 0.000...1): the value is what counts.
			if n, z := specNumber(t, get, "n"), specNumber(t, get, "z"); !jsonnum.Equal(n, s.n) || !jsonnum.Equal(z, s.z) {
				t.Fatalf("after PATCH %s: n=%s z=%.40s, want %s and %s", s.spec, n, z, s.n, s.z)
			}
		}
		// A value that cannot be kept exactly is refused, not rounded.
		e.do("PATCH", c.Href, `{"spec":{"n":9007199254740993,"z":2e-400}}`).problem(400, "HYPERFLEET-VAL-002")
		if got := e.getCluster(c.ID).Generation; got != 7 {
			t.Fatalf("refused PATCH: generation %d", got)
		}
	})
}
