package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Bodies that encoding/json alone would accept quietly are 400s naming the
// field, and change nothing.
func TestStrictBodies(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("strict")
		deep := strings.Repeat(`{"a":`, 2000) + `1` + strings.Repeat(`}`, 2000)
		for _, tc := range []struct {
			method, path, body, field string
		}{
			{"POST", base + "/clusters", `{"kind":"Cluster","name":"deep","spec":` + deep + `}`, "spec"},
			{"PATCH", c.Href, `{"spec":` + deep + `}`, "spec"},
			{"PUT", statusPath(c), `{"adapter":"validation","observed_generation":1,"data":` + deep + `}`, "data"},
			{"POST", base + "/clusters", `{"kind":"Cluster","name":"dup","name":"dup2","spec":{}}`, "name"},
			{"PATCH", c.Href, `{"spec":{"replicas":1,"replicas":2}}`, "spec.replicas"},
			{"POST", base + "/clusters", `{"kind":"Cluster","Name":"upper","spec":{}}`, "Name"},
			{"PUT", statusPath(c), `{"Adapter":"validation","observed_generation":1}`, "Adapter"},
			{"POST", base + "/clusters", "{\"kind\":\"Cluster\",\"name\":\"utf\",\"spec\":{\"a\":\"\xff\xfe\"}}", "spec.a"},
			{"POST", base + "/clusters", `{"kind":"Cluster","name":"nul","spec":{"a":"x\u0000"}}`, "spec.a"},
			{"POST", base + "/clusters", `{"kind":"Cluster","name":"sur","spec":{"a":"\ud800"}}`, "spec.a"},
			{"PATCH", c.Href, `{"labels":{"environment":null}}`, "labels.environment"},
		} {
			p := e.do(tc.method, tc.path, tc.body).problem(400, "HYPERFLEET-VAL-002")
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
				t.Errorf("%s %s %.60s: errors %+v, want field %s", tc.method, tc.path, tc.body, p.Errors, tc.field)
			}
		}
		var l resource.List[resource.Resource]
		e.do("GET", base+"/clusters", nil).expect(200).into(&l)
		if l.Total != 1 {
			t.Errorf("refused bodies created clusters: %+v", l.Items)
		}
		if got := e.getCluster(c.ID); got.Generation != 1 || got.Labels["environment"] != "production" {
			t.Errorf("refused patches changed the cluster: %+v", got)
		}
		// At the limit a document is fine.
		ok := strings.Repeat(`{"a":`, 30) + `1` + strings.Repeat(`}`, 30)
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"deep-ok","spec":`+ok+`}`).expect(201)
	})
}

// A stored document the database's JSON functions cannot parse (written
// before the depth limit existed) must not make searches fail for everyone.
func TestStoredDocumentCannotBreakSearch(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("deep-stored")
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"plain","spec":{"a":"x","n":2}}`).expect(201)
		deep := strings.Repeat(`{"a":`, 1200) + `1` + strings.Repeat(`}`, 1200)
		q := "UPDATE resources SET spec = ? WHERE id = ?"
		if e.backend == store.BackendPostgres {
			q = "UPDATE resources SET spec = $1::jsonb WHERE id = $2"
		}
		if _, err := e.app.Store.SQLDB().ExecContext(context.Background(), q, deep, c.ID); err != nil {
			t.Fatalf("store a deep spec: %v", err)
		}
		for query, want := range map[string]int64{
			"spec.a = 'x'":                  1,
			"spec.n > 1":                    1,
			"spec.a.a = true":               0,
			"spec.a != 'y' and name='none'": 0,
		} {
			var l resource.List[resource.Resource]
			e.do("GET", base+"/clusters?search="+urlQuery(query), nil).expect(200).into(&l)
			if l.Total != want {
				t.Errorf("%s: %d matches, want %d", query, l.Total, want)
			}
		}
		e.do("GET", base+"/clusters", nil).expect(200)
	})
}

// Searches are bounded: more values or comparisons than the limits are a
// 400 that states the limit, on every list endpoint and field kind; the
// largest searches the limits allow run.
func TestSearchLimits(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("limits")
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"neg","spec":{"x":-5}}`).expect(201)
		e.createNodePool(c.ID, "pool")
		list := func(n int) string {
			v := make([]string, n)
			for i := range v {
				v[i] = fmt.Sprintf("'%d'", i)
			}
			return "(" + strings.Join(v, ",") + ")"
		}
		for _, path := range []string{"/clusters", "/nodepools", "/clusters/" + c.ID + "/nodepools"} {
			for _, field := range []string{"name", "labels.environment", "spec.platform.type"} {
				q := field + " in (" + strings.TrimSuffix(strings.Repeat("'',", 999), ",") + ")"
				p := e.do("GET", base+path+"?search="+urlQuery(q), nil).problem(400, "HYPERFLEET-VAL-004")
				if !strings.Contains(p.Detail, "the limit is 100") {
					t.Errorf("%s %s: %s", path, field, p.Detail)
				}
			}
		}
		terms := make([]string, 33)
		for i := range terms {
			terms[i] = fmt.Sprintf("name='n%d'", i)
		}
		p := e.do("GET", base+"/clusters?search="+urlQuery(strings.Join(terms, " or ")), nil).problem(400, "HYPERFLEET-VAL-004")
		if !strings.Contains(p.Detail, "the limit is 32") {
			t.Errorf("33 comparisons: %s", p.Detail)
		}
		// The biggest search the length limit allows at full lists.
		var parts []string
		for i := 0; len(strings.Join(parts, " or ")) < 3800; i++ {
			field := []string{"spec.n", "labels.environment", "name"}[i%3]
			parts = append(parts, field+" in "+list(100))
		}
		var l resource.List[resource.Resource]
		e.do("GET", base+"/clusters?search="+urlQuery(strings.Join(parts, " or ")), nil).expect(200).into(&l)
		// Numbers: out of range is a 400, negative numbers work.
		e.do("GET", base+"/clusters?search="+urlQuery("spec.x > 1e400"), nil).problem(400, "HYPERFLEET-VAL-004")
		e.do("GET", base+"/clusters?search="+urlQuery("generation > 1e400"), nil).problem(400, "HYPERFLEET-VAL-004")
		e.do("GET", base+"/clusters?search="+urlQuery("spec.x < -1"), nil).expect(200).into(&l)
		if l.Total != 1 || l.Items[0].Name != "neg" {
			t.Errorf("spec.x < -1 matched %+v", l.Items)
		}
	})
}

// syncBuffer collects log lines from the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A failed INSERT is logged without its bound values: a spec may hold
// secrets.
func TestFailedInsertLogsNoValues(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		var logs syncBuffer
		e := newEnv(t, backend, func(o *apiserver.Options) {
			o.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel)
		})
		const secret = "hunter2-do-not-log"
		body := `{"kind":"Cluster","name":"twice","spec":{"password":"` + secret + `"}}`
		e.do("POST", base+"/clusters", body).expect(201)
		e.do("POST", base+"/clusters", body).problem(409, "HYPERFLEET-CNF-001")
		out := logs.String()
		if !strings.Contains(out, "query failed") {
			t.Fatalf("the failed INSERT was not logged:\n%s", out)
		}
		if strings.Contains(out, secret) {
			t.Errorf("the log holds a bound value:\n%s", out)
		}
	})
}

// The spec limit bounds what a list response holds: a spec over it is a 400
// naming the limit, and listing a full page of the largest resources
// allocates a bounded multiple of the page's spec bytes (allocation volume
// is counted, not timed).
func TestListMemoryBound(t *testing.T) {
	const limit = 16 << 10
	backends(t, func(t *testing.T, backend string) {
		e := newEnv(t, backend, func(o *apiserver.Options) { o.Server.SpecLimit = limit })
		spec := func(n int) string { return `{"blob":"` + strings.Repeat("x", n-len(`{"blob":""}`)) + `"}` }
		p := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"big","spec":`+spec(limit+1)+`}`).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("spec") || !strings.Contains(p.Detail, "the limit is 16384 bytes") {
			t.Errorf("oversized spec: %+v", p)
		}
		c := e.createCluster("patched")
		e.do("PATCH", c.Href, `{"spec":`+spec(limit+1)+`}`).problem(400, "HYPERFLEET-VAL-001")
		e.do("POST", base+"/clusters/"+c.ID+"/nodepools", `{"kind":"NodePool","name":"big","spec":`+spec(limit+1)+`}`).problem(400, "HYPERFLEET-VAL-001")
		for i := range 99 {
			e.do("POST", base+"/clusters", fmt.Sprintf(`{"kind":"Cluster","name":"full-%d","spec":%s}`, i, spec(limit))).expect(201)
		}
		get := func() int {
			resp, err := http.Get(e.url + base + "/clusters?pageSize=100")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			n, _ := io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("list = %d", resp.StatusCode)
			}
			return int(n)
		}
		get() // warm connections and caches
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		size := get()
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		ratio := float64(alloc) / float64(100*limit)
		t.Logf("%s: response %d bytes, allocated %d bytes (%.1fx the page's spec bytes)", backend, size, alloc, ratio)
		// The operator guide states 5x: the rows as read, and one item at a
		// time as encoded. Encoding the whole page as one buffer costs 7-8x.
		if ratio > 5 {
			t.Errorf("one list of 100 resources at the spec limit allocated %.1fx their spec bytes; the documented bound is 5x", ratio)
		}
	})
}

// A path id is the exact lowercase UUID or nothing: padded, case-folded or
// undecodable ids are 404s that touch nothing; a query string that does not
// parse is a 400 rather than silently read without the broken pairs.
func TestPathIDsAndQueryStrings(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("exact")
		np := e.createNodePool(c.ID, "pool")
		for _, id := range []string{"%20" + c.ID, c.ID + "%09", c.ID + "%c2%a0", strings.ToUpper(c.ID), c.ID + "%00", "%ff", "%00"} {
			e.do("GET", base+"/clusters/"+id, nil).problem(404, "HYPERFLEET-NTF-001")
			e.do("PATCH", base+"/clusters/"+id, `{"labels":{"a":"b"}}`).problem(404, "HYPERFLEET-NTF-001")
			e.do("DELETE", base+"/clusters/"+id, nil).problem(404, "HYPERFLEET-NTF-001")
			e.do("PUT", base+"/clusters/"+id+"/statuses", report("validation", 1, "True")).problem(404, "HYPERFLEET-NTF-001")
			e.do("GET", base+"/clusters/"+c.ID+"/nodepools/"+strings.Replace(id, c.ID, np.ID, 1), nil).problem(404, "HYPERFLEET-NTF-001")
			e.do("GET", base+"/clusters/"+id+"/nodepools", nil).problem(404, "HYPERFLEET-NTF-001")
		}
		if got := e.getCluster(c.ID); got.Generation != 1 || got.DeletedTime != nil || len(got.Labels) != 1 {
			t.Errorf("requests to look-alike ids changed the cluster: %+v", got)
		}
		for _, q := range []string{"orderBy=name;drop&order=asc", "search=%zz", "page=1;size=2"} {
			p := e.do("GET", base+"/clusters?"+q, nil).problem(400, "HYPERFLEET-VAL-003")
			if !strings.Contains(p.Detail, "query string") {
				t.Errorf("?%s: %s", q, p.Detail)
			}
		}
		e.do("GET", base+"/clusters?orderBy=name&order=asc", nil).expect(200)
	})
}

// Status reports are bounded: conditions per report, field lengths, and
// adapters per resource; each limit is a 400 that names it.
func TestStatusReportBounds(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("bounded")
		many := report("validation", 1, "True")
		conds := many["conditions"].([]map[string]string)
		for i := len(conds); i < 33; i++ {
			conds = append(conds, map[string]string{"type": fmt.Sprintf("Extra%d", i), "status": "True"})
		}
		many["conditions"] = conds
		p := e.report(c, many).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("conditions") || !strings.Contains(p.Detail, "at most 32 conditions") {
			t.Errorf("33 conditions: %+v", p)
		}
		for field, cond := range map[string]map[string]string{
			"type":    {"type": strings.Repeat("T", 100_000), "status": "True"},
			"reason":  {"type": "X", "status": "True", "reason": strings.Repeat("r", 257)},
			"message": {"type": "X", "status": "True", "message": strings.Repeat("m", 4097)},
		} {
			body := report("validation", 1, "True")
			body["conditions"] = append(body["conditions"].([]map[string]string), cond)
			p := e.report(c, body).problem(400, "HYPERFLEET-VAL-001")
			if !p.names("conditions[3]."+field) || !strings.Contains(p.Detail, "at most") || len(p.Errors[0].Value.(string)) > 100 {
				t.Errorf("long %s: %.300s", field, p.Detail)
			}
		}
		for _, name := range []string{"a\x01b", "two words", strings.Repeat("a", 254)} {
			e.report(c, report(name, 1, "True")).problem(400, "HYPERFLEET-VAL-001")
		}
		// Unregistered adapter names fill up to the limit, then only
		// registered adapters (and those already stored) are accepted.
		for i := range lifecycle.MaxAdaptersPerResource {
			e.report(c, report(fmt.Sprintf("stray-%d", i), 1, "True")).expect(201)
		}
		p = e.report(c, report("one-too-many", 1, "True")).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("adapter") || !strings.Contains(p.Detail, "64 adapters") {
			t.Errorf("65th adapter: %+v", p)
		}
		e.report(c, report("stray-0", 1, "False")).expect(201)
		e.report(c, report("validation", 1, "True")).expect(201)
	})
}

// Oversized headers get a problem document, not Go's plain-text 431.
func TestOversizedHeaders(t *testing.T) {
	e := newEnv(t, store.BackendSQLite)
	req, _ := http.NewRequest("GET", e.url+base+"/clusters", nil)
	req.Header.Set("X-Padding", strings.Repeat("p", apiserver.HeaderLimit))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := &response{t: t, method: "GET", path: req.URL.Path, status: resp.StatusCode, header: resp.Header, body: body}
	if p := r.problem(431, "HYPERFLEET-VAL-008"); !strings.Contains(p.Detail, "the limit is 65536") {
		t.Errorf("431 detail: %s", p.Detail)
	}
	e.do("GET", base+"/clusters", nil).expect(200)
}
