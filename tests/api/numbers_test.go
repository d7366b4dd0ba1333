package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver"
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
// value spelled differently changes nothing (the spelling stored stays);
// both backends return the spelling stored, byte for byte.
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
			{`{"n":9.007199254740993e15,"z":0.1}`, 6, "9.007199254740993e15", "0.1"},
			{`{"n":9007199254740993,"z":0}`, 7, "9007199254740993", "0"},
		}
		for _, s := range steps {
			r := e.do("PATCH", c.Href, `{"spec":`+s.spec+`}`).expect(200)
			if got := r.resource().Generation; got != s.gen {
				t.Fatalf("PATCH %s: generation %d, want %d", s.spec, got, s.gen)
			}
			get := e.do("GET", c.Href, nil).expect(200)
			if n, z := specNumber(t, get, "n"), specNumber(t, get, "z"); n != s.n || z != s.z {
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

// keptNumbers are spelled unlike their value's plain decimal (which
// PostgreSQL's jsonb wrote back: -5e-324 as 327 characters) or beyond a
// float64's digits: each must come back byte for byte.
var keptNumbers = []string{"-5e-324", "1E+2", "1.0", "123456789012345678901234567890", "0.1e-7", "2.50", "-0"}

// numbersDoc is an object holding each kept number under n0, n1, ..., in
// an array, and nested, written compactly (as the API returns it).
func numbersDoc(extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, n := range keptNumbers {
		fmt.Fprintf(&b, `"n%d":%s,`, i, n)
	}
	b.WriteString(`"list":[` + strings.Join(keptNumbers, ",") + `],"nested":{"deep":[{"x":1E+2}]}` + extra + "}")
	return b.String()
}

// rawField reads a top-level member of a JSON object as its raw bytes.
func rawField(t *testing.T, doc []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("decode %.200s: %v", doc, err)
	}
	return string(m[key])
}

// Numbers in spec and in a report's data and metadata come back exactly as
// sent, on both backends, from every read: the create and PATCH answers,
// GET, a list, a search, and the statuses list.
func TestNumbersKeptAsSent(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		spec := numbersDoc("")
		created := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"kept","spec":`+spec+`}`).expect(201)
		c := created.resource()
		listed := func(query string) string {
			t.Helper()
			var l struct {
				Items []json.RawMessage `json:"items"`
			}
			e.do("GET", base+"/clusters?"+query, nil).expect(200).into(&l)
			for _, it := range l.Items {
				if rawField(t, it, "id") == `"`+c.ID+`"` {
					return rawField(t, it, "spec")
				}
			}
			t.Fatalf("GET /clusters?%s does not list %s", query, c.ID)
			return ""
		}
		check := func(what, got, want string) {
			t.Helper()
			if got != want {
				t.Errorf("%s: spec\n %.400s\nwant\n %.400s", what, got, want)
			}
		}
		check("POST answer", rawField(t, created.body, "spec"), spec)
		check("GET", rawField(t, e.do("GET", c.Href, nil).expect(200).body, "spec"), spec)
		check("list", listed("pageSize=100"), spec)
		for _, q := range []string{"spec.n1 = 100", "spec.n1 > 99.5", "spec.nested.deep = 'x' or spec.n5 = 2.5"} {
			check("search "+q, listed("search="+urlQuery(q)), spec)
		}

		// A PATCH replaces spec as a whole; the new numbers are kept too.
		patched := numbersDoc(`,"added":1.50E3`)
		r := e.do("PATCH", c.Href, `{"spec":`+patched+`}`).expect(200)
		check("PATCH answer", rawField(t, r.body, "spec"), patched)
		check("GET after PATCH", rawField(t, e.do("GET", c.Href, nil).expect(200).body, "spec"), patched)
		check("search after PATCH", listed("search="+urlQuery("spec.added = 1500")), patched)

		data, metadata := numbersDoc(""), `{"took":1E+2,"ratio":0.1e-7}`
		body, _ := json.Marshal(report("validation", 1, "True"))
		body = bytes.Replace(body, []byte(`{"adapter"`), []byte(`{"data":`+data+`,"metadata":`+metadata+`,"adapter"`), 1)
		put := e.do("PUT", statusPath(c), string(body)).expect(201)
		check("PUT answer data", rawField(t, put.body, "data"), data)
		check("PUT answer metadata", rawField(t, put.body, "metadata"), metadata)
		var sts struct {
			Items []json.RawMessage `json:"items"`
		}
		e.do("GET", statusPath(c), nil).expect(200).into(&sts)
		if len(sts.Items) != 1 {
			t.Fatalf("statuses: %d items, want 1", len(sts.Items))
		}
		check("statuses data", rawField(t, sts.Items[0], "data"), data)
		check("statuses metadata", rawField(t, sts.Items[0], "metadata"), metadata)
	})
}

// A resource at the spec limit made of short exponent numbers reads back
// at the size it was sent, so a page of 100 of them stays within the list
// memory bound of the operator guide on both backends (PostgreSQL's jsonb
// wrote -5e-324 as 327 characters: a 64 KiB spec came back as 380 KB).
func TestExponentNumbersPageBound(t *testing.T) {
	const limit = 64 << 10
	backends(t, func(t *testing.T, backend string) {
		e := newEnv(t, backend, func(o *apiserver.Options) { o.Server.SpecLimit = limit })
		numbers := `,"n":[` + strings.TrimSuffix(strings.Repeat("-5e-324,", 999), ",") + "]}"
		spec := `{"pad":"` + strings.Repeat("x", limit-len(`{"pad":""`)-len(numbers)) + `"` + numbers
		if len(spec) != limit {
			t.Fatalf("spec of %d bytes, want %d", len(spec), limit)
		}
		var one int
		for i := range 100 {
			r := e.do("POST", base+"/clusters", fmt.Sprintf(`{"kind":"Cluster","name":"exp-%d","spec":%s}`, i, spec)).expect(201)
			if i == 0 {
				one = len(e.do("GET", r.resource().Href, nil).expect(200).body)
			}
		}
		page, alloc := listAllocations(t, e, base+"/clusters?pageSize=100")
		client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
		defer client.CloseIdleConnections()
		fetch := func() error {
			resp, err := client.Get(e.url + base + "/clusters?pageSize=100")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
				return fmt.Errorf("list = %d (%v)", resp.StatusCode, err)
			}
			return nil
		}
		peak, err := concurrentListPeak(8, fetch)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: a %d-byte spec reads back as a %d-byte resource; a page of 100 is %d bytes and allocated %d bytes (%.1fx the page's spec bytes); 8 concurrent pages raised the heap by %d bytes at most",
			backend, len(spec), one, page, alloc, float64(alloc)/float64(100*limit), peak)
		if one > len(spec)+4096 {
			t.Errorf("a %d-byte spec reads back as a %d-byte resource", len(spec), one)
		}
		if page > 100*(len(spec)+4096) {
			t.Errorf("a page of 100 %d-byte specs is %d bytes", len(spec), page)
		}
		if ratio := float64(alloc) / float64(100*limit); ratio > 5 {
			t.Errorf("one page allocated %.1fx its spec bytes; the documented bound is 5x", ratio)
		}
	})
}

// concurrentListPeak runs n lists at once and returns the most the heap
// grew above its level before them, sampled every millisecond.
func concurrentListPeak(n int, fetch func() error) (uint64, error) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, uint64(0)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var s runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > base && s.HeapAlloc-base > peak {
				peak = s.HeapAlloc - base
			}
		}
	}()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fetch() }()
	}
	wg.Wait()
	close(done)
	<-sampled
	return peak, errors.Join(errs...)
}
