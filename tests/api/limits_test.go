package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/request"
	"github.com/hyperfleet/hyperfleet/resource"
)

// labelsOf makes n valid labels whose keys and values come to about bytes
// (at most 380 a label: a 253-character prefix, a 63-character name and
// value).
func labelsOf(n, bytes int) map[string]string {
	out := map[string]string{}
	per := bytes / n
	value := strings.Repeat("v", min(63, max(1, per-7)))
	for i := range n {
		name := fmt.Sprintf("k-%04d", i)
		if rest := per - len(value) - len(name) - 1; rest > 0 {
			name = dnsPrefix(min(rest, 253)) + "/" + name
		}
		out[name] = value
	}
	return out
}

// dnsPrefix is a valid DNS subdomain of n characters.
func dnsPrefix(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.Repeat("a", min(63, max(1, n-b.Len()))))
	}
	return strings.TrimSuffix(b.String()[:n], ".")
}

// Labels are bounded in count and size: beyond either limit a create or
// PATCH is a 400 naming labels and the limit, and changes nothing.
func TestLabelLimits(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("labelled")
		body := func(name string, labels map[string]string) map[string]any {
			b := clusterBody(name)
			b["labels"] = labels
			return b
		}
		for _, tc := range []struct {
			labels     map[string]string
			constraint string
			detail     string
		}{
			{labelsOf(lifecycle.MaxLabels+1, 1000), "maxItems=64", "at most 64 labels (got 65)"},
			{labelsOf(2600, 100_000), "maxItems=64", "at most 64 labels (got 2600)"},
		} {
			p := e.do("POST", base+"/clusters", body("too-many", tc.labels)).problem(400, "HYPERFLEET-VAL-001")
			if len(p.Errors) != 1 || p.Errors[0].Field != "labels" || p.Errors[0].Constraint != tc.constraint || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("%d labels: %+v", len(tc.labels), p)
			}
			e.do("PATCH", c.Href, map[string]any{"labels": tc.labels}).problem(400, "HYPERFLEET-VAL-001")
		}
		// 64 labels with long prefixed keys: within the count, over the size.
		big := labelsOf(lifecycle.MaxLabels, 22000)
		p := e.do("POST", base+"/clusters", body("too-big", big)).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("labels") || p.Errors[0].Constraint != fmt.Sprintf("maxBytes=%d", lifecycle.MaxLabelBytes) || !strings.Contains(p.Detail, "the limit is 16384 bytes") {
			t.Errorf("64 large labels: %+v", p)
		}
		e.do("PATCH", c.Href, map[string]any{"labels": big}).problem(400, "HYPERFLEET-VAL-001")
		if got := e.getCluster(c.ID); got.Generation != 1 || len(got.Labels) != 1 {
			t.Errorf("refused PATCHes changed the cluster: generation %d, %d labels", got.Generation, len(got.Labels))
		}
		// At the limits: fine.
		e.do("POST", base+"/clusters", body("at-limit", labelsOf(lifecycle.MaxLabels, lifecycle.MaxLabelBytes))).expect(201)
		e.do("PATCH", c.Href, map[string]any{"labels": labelsOf(lifecycle.MaxLabels, 4000)}).expect(200)
	})
}

// A spec holds at most 1,000 values (each is a row of the search index):
// the 32,000-element array, well within the spec's byte limit, is
// a 400 naming spec and the limit; 1,000 values are stored.
func TestSpecValueLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("valued")
		array := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }
		for _, spec := range []string{
			`{"a":` + array(32000) + `}`,
			`{"a":` + array(lifecycle.MaxSpecValues) + `,"b":"one more"}`,
			`{"a":{"b":[` + strings.TrimSuffix(strings.Repeat(`{"k":true,"v":"x"},`, 501), ",") + `]}}`,
		} {
			p := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"values","spec":`+spec+`}`).problem(400, "HYPERFLEET-VAL-001")
			if !p.names("spec") || p.Errors[0].Constraint != "maxValues=1000" || !strings.Contains(p.Detail, "the limit is 1000") {
				t.Errorf("%.60s: %+v", spec, p)
			}
			e.do("PATCH", c.Href, `{"spec":`+spec+`}`).problem(400, "HYPERFLEET-VAL-001")
		}
		if got := e.getCluster(c.ID); got.Generation != 1 {
			t.Errorf("refused PATCHes moved the generation to %d", got.Generation)
		}
		// Keys, nulls, empty objects and arrays are not values.
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"values","spec":{"a":`+array(lifecycle.MaxSpecValues-1)+`,"b":{"c":null,"d":{},"e":[]},"f":true}}`).expect(201)
		var l resource.List[resource.Resource]
		e.do("GET", base+"/clusters?search="+urlQuery("spec.f = true"), nil).expect(200).into(&l)
		if l.Total != 1 {
			t.Errorf("spec.f = true found %d", l.Total)
		}
	})
}

// A status report's data and metadata are bounded (16 KiB each by
// default, --status-data-limit): over it a report is a 400 naming the
// field and the limit, and nothing is stored.
func TestStatusDataLimits(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		for _, limit := range []int64{0, 4096} {
			e := newEnv(t, backend, func(o *apiserver.Options) { o.Server.StatusDataLimit = limit })
			want := limit
			if want == 0 {
				want = request.DefaultStatusDataLimit
			}
			c := e.createCluster("reported")
			for _, field := range []string{"data", "metadata"} {
				body := report("validation", 1, "True")
				body[field] = map[string]string{"blob": strings.Repeat("d", int(want))}
				p := e.report(c, body).problem(400, "HYPERFLEET-VAL-001")
				if !p.names(field) || p.Errors[0].Constraint != fmt.Sprintf("maxBytes=%d", want) || !strings.Contains(p.Detail, fmt.Sprintf("the limit is %d bytes", want)) {
					t.Errorf("limit %d, %s: %+v", want, field, p)
				}
				body[field] = map[string]string{"blob": strings.Repeat("d", int(want)-len(`{"blob":""}`))}
				e.report(c, body).expect(201)
			}
			if sts := e.statuses(c); len(sts) != 1 {
				t.Fatalf("statuses %+v", sts)
			}
		}
	})
}

// listAllocations reads a list and returns its size and the bytes the
// process allocated while serving it (allocation volume is counted, not
// timed).
func listAllocations(t *testing.T, e *env, path string) (int, uint64) {
	t.Helper()
	// Without gzip: the bound is the list's own; compressors are pooled.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	get := func() int {
		resp, err := client.Get(e.url + path)
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
	return size, after.TotalAlloc - before.TotalAlloc
}

// The documented bounds of a list hold for the largest statuses list and
// the largest labels: 64 reports whose data and
// metadata are at the limit (the 40 reports of 1 MB made a 40 MB
// list), and 100 resources at the label limits (2,600 labels made a 44 MB
// page).
func TestStatusAndLabelListMemoryBound(t *testing.T) {
	if raceEnabled {
		t.Skip("skipping: the race detector's own allocations break the bounds; this test runs without it in both tiers")
	}
	backends(t, func(t *testing.T, backend string) {
		e := newEnv(t, backend)
		c := e.createCluster("reported")
		limit := int(request.DefaultStatusDataLimit)
		blob := strings.Repeat("d", limit-len(`{"blob":""}`))
		for i := range lifecycle.MaxAdaptersPerResource {
			body := report(fmt.Sprintf("adapter-%02d", i), 1, "True")
			body["data"] = map[string]string{"blob": blob}
			body["metadata"] = map[string]string{"blob": blob}
			e.report(c, body).expect(201)
		}
		payload := lifecycle.MaxAdaptersPerResource * 2 * limit
		size, alloc := listAllocations(t, e, statusPath(c)+"?pageSize=100")
		ratio := float64(alloc) / float64(payload)
		t.Logf("%s: statuses list of %d reports at the data limit: %d bytes, allocated %d (%.1fx their data and metadata)",
			backend, lifecycle.MaxAdaptersPerResource, size, alloc, ratio)
		if size > 3*payload || ratio > 5 {
			t.Errorf("statuses list: %d bytes, %.1fx allocated; the bound is 5x its %d bytes of data and metadata", size, ratio, payload)
		}

		labels := labelsOf(lifecycle.MaxLabels, lifecycle.MaxLabelBytes)
		raw, _ := json.Marshal(labels)
		for i := range 100 {
			b := clusterBody(fmt.Sprintf("labelled-%d", i))
			b["labels"] = labels
			e.do("POST", base+"/clusters", b).expect(201)
		}
		size, alloc = listAllocations(t, e, base+"/clusters?pageSize=100")
		ratio = float64(alloc) / float64(size)
		t.Logf("%s: a page of 100 clusters with %d labels (%d bytes) each: %d bytes, allocated %d (%.1fx the page)",
			backend, len(labels), len(raw), size, alloc, ratio)
		// Labels are decoded into maps (and SQLite's driver copies each
		// text column twice), so they cost more per byte than a spec,
		// which is passed through: 3.8x the page on PostgreSQL, 4.8x on
		// SQLite.
		if ratio > 6 {
			t.Errorf("labels page: allocated %.1fx its %d bytes; the bound is 6x", ratio, size)
		}
	})
}
