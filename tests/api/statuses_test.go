package api

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

// Every rule of CONTRACT.md "Adapter status reports", end to end.
func TestStatusReportRules(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("rules")
		path := statusPath(c)

		// Rule 1: shape and mandatory conditions.
		bad := []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"no adapter", withField(report("validation", 1, "True"), "adapter", ""), "adapter"},
			{"generation 0", withField(report("validation", 1, "True"), "observed_generation", 0), "observed_generation"},
			{"no observed_time", withoutField(report("validation", 1, "True"), "observed_time"), "observed_time"},
			{"observed_time 10 minutes ahead", withField(report("validation", 1, "True"), "observed_time", time.Now().Add(10*time.Minute).UTC().Format(time.RFC3339)), "observed_time"},
			{"observed_time an hour old", withField(report("validation", 1, "True"), "observed_time", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)), "observed_time"},
			{"observed_time not a date", withField(report("validation", 1, "True"), "observed_time", "last tuesday"), "observed_time"},
			{"no conditions", withoutField(report("validation", 1, "True"), "conditions"), "conditions"},
			{"Health missing", withField(report("validation", 1, "True"), "conditions", []map[string]string{{"type": "Available", "status": "True"}, {"type": "Applied", "status": "True"}}), "conditions"},
			{"bad status", withField(report("validation", 1, "True"), "conditions", []map[string]string{{"type": "Available", "status": "yes"}, {"type": "Applied", "status": "True"}, {"type": "Health", "status": "True"}}), "conditions[0].status"},
			{"duplicate type", withField(report("validation", 1, "True"), "conditions", []map[string]string{{"type": "Available", "status": "True"}, {"type": "Applied", "status": "True"}, {"type": "Health", "status": "True"}, {"type": "Health", "status": "False"}}), "conditions[3].type"},
			{"data not an object", withField(report("validation", 1, "True"), "data", []int{1}), "data"},
		}
		for _, b := range bad {
			res := e.report(c, b.body)
			if res.status != 400 {
				t.Errorf("%s: %d, want 400: %s", b.name, res.status, res.body)
				continue
			}
			var p problemDoc
			res.into(&p)
			if !p.names(b.field) {
				t.Errorf("%s: problem names %v, want %s", b.name, p.fields(), b.field)
			}
		}
		if sts := e.statuses(c); len(sts) != 0 {
			t.Fatalf("rejected reports were stored: %+v", sts)
		}

		// Rule 2: ahead of the resource's generation -> 204, nothing stored.
		e.report(c, report("validation", 2, "True")).expect(204)
		// Rule 3: first Unknown is stored but not aggregated.
		st := e.report(c, report("validation", 1, "Unknown")).expect(201)
		if !strings.Contains(string(st.body), `"Unknown"`) {
			t.Errorf("stored Unknown report = %s", st.body)
		}
		e.expectCond(c.ID, "ValidationSuccessful", "False/AwaitingAdapters/0")
		e.expectCond(c.ID, "Available", "False/AwaitingAdapters/0")
		// ... and a later Unknown is ignored.
		e.report(c, report("validation", 1, "True")).expect(201)
		e.report(c, report("validation", 1, "Unknown")).expect(204)
		e.expectCond(c.ID, "ValidationSuccessful", "True/RTrue/1")

		// Rule 4: upsert keeps created_time and unchanged transition times.
		first := e.statusOf(c, "validation")
		// Not a wait for a condition: the second report's times must be
		// later than the first's by more than a stored timestamp's rounding.
		time.Sleep(5 * time.Millisecond)
		e.report(c, report("validation", 1, "False")).expect(201)
		second := e.statusOf(c, "validation")
		if !second.CreatedTime.Equal(first.CreatedTime) || !second.LastReportTime.After(first.LastReportTime) {
			t.Errorf("created/last report: %v/%v -> %v/%v", first.CreatedTime, first.LastReportTime, second.CreatedTime, second.LastReportTime)
		}
		if !transition(second, "Applied").Equal(transition(first, "Applied")) || !transition(second, "Available").After(transition(first, "Available")) {
			t.Errorf("transition times: Applied %v->%v, Available %v->%v", transition(first, "Applied"), transition(second, "Applied"), transition(first, "Available"), transition(second, "Available"))
		}

		// Rule 2 again: older than this adapter's stored report -> 204.
		e.do("PATCH", c.Href, `{"spec":{"v":2}}`).expect(200)
		e.report(c, report("validation", 2, "True")).expect(201)
		e.report(c, report("validation", 1, "False")).expect(204)
		if got := e.statusOf(c, "validation"); got.ObservedGeneration != 2 || got.ConditionStatus("Available") != "True" {
			t.Errorf("stale report overwrote the stored one: %+v", got)
		}

		// Rule 5: unregistered adapters are stored and listed, not aggregated.
		e.report(c, report("rogue", 2, "False")).expect(201)
		if got := e.statusOf(c, "rogue"); got.Adapter != "rogue" {
			t.Errorf("unregistered report not listed")
		}
		r := e.getCluster(c.ID)
		if _, ok := r.Condition("RogueSuccessful"); ok {
			t.Errorf("unregistered adapter got a condition")
		}

		// Statuses of other adapters are untouched by an upsert.
		e.report(c, report("landing-zone", 2, "True")).expect(201)
		if got := e.statusOf(c, "validation"); got.ObservedGeneration != 2 {
			t.Errorf("validation status changed by landing-zone's report: %+v", got)
		}
		e.expectCond(c.ID, "Ready", "True/ResourceReady/2")

		// POST is an alias of PUT.
		e.do("POST", path, report("landing-zone", 2, "True")).expect(201)
	})
}

// The seed 001 walk-through and mixed generations, through HTTP.
func TestAggregationEndToEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("aggregated")
		e.report(c, report("validation", 1, "True")).expect(201)
		e.expectCond(c.ID, "Ready", "False/AdaptersReconciling/1")
		e.expectCond(c.ID, "Available", "False/AwaitingAdapters/0")
		e.report(c, report("landing-zone", 1, "True")).expect(201)
		r := e.expectCond(c.ID, "Ready", "True/ResourceReady/1")
		for typ, want := range map[string]string{
			"Reconciled": "True/ResourceReady/1", "Available": "True/ResourceAvailable/1", "LastKnownReconciled": "True/ResourceAvailable/1",
			"ValidationSuccessful": "True/RTrue/1", "LandingZoneSuccessful": "True/RTrue/1",
		} {
			if got := cond(r, typ); got != want {
				t.Errorf("%s = %s, want %s", typ, got, want)
			}
		}

		// One adapter reports False at generation 1 -> Available False.
		e.report(c, report("landing-zone", 1, "False")).expect(201)
		e.expectCond(c.ID, "Available", "False/AdaptersUnavailable/1")
		e.expectCond(c.ID, "Ready", "False/AdaptersUnavailable/1")
		e.report(c, report("landing-zone", 1, "True")).expect(201)
		e.expectCond(c.ID, "Available", "True/ResourceAvailable/1")

		// Spec change: Ready False at 2, Available keeps generation 1.
		e.do("PATCH", c.Href, `{"spec":{"region":"eu"}}`).expect(200)
		e.expectCond(c.ID, "Ready", "False/AdaptersReconciling/2")
		e.expectCond(c.ID, "Available", "True/ResourceAvailable/1")
		// One adapter reports False at generation 2 -> Available stays True.
		e.report(c, report("validation", 2, "False")).expect(201)
		e.expectCond(c.ID, "Available", "True/ResourceAvailable/1")
		e.expectCond(c.ID, "LastKnownReconciled", "True/ResourceAvailable/1")
		e.expectCond(c.ID, "ValidationSuccessful", "False/RFalse/2")
		// Both at 2: False is now decided...
		e.report(c, report("landing-zone", 2, "True")).expect(201)
		e.expectCond(c.ID, "Available", "False/AdaptersUnavailable/2")
		// ... and True once both agree.
		e.report(c, report("validation", 2, "True")).expect(201)
		r = e.expectCond(c.ID, "Ready", "True/ResourceReady/2")
		if got := cond(r, "Available"); got != "True/ResourceAvailable/2" {
			t.Errorf("Available = %s", got)
		}
		ready, _ := r.Condition("Ready")
		if !ready.LastTransitionTime.After(ready.CreatedTime) {
			t.Errorf("Ready transition time %v not after created %v", ready.LastTransitionTime, ready.CreatedTime)
		}
	})
}

// Twenty adapters report at once, many times: no update may be lost and the
// aggregate must match the last report of each.
func TestConcurrentReports(t *testing.T) {
	var adapters []string
	for i := 0; i < 20; i++ {
		adapters = append(adapters, fmt.Sprintf("adapter-%02d", i))
	}
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("crowded")
		for round, status := range []string{"False", "True"} {
			var wg sync.WaitGroup
			errs := make(chan string, len(adapters))
			for _, a := range adapters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res := e.report(c, report(a, 1, status))
					if res.status != 201 {
						errs <- fmt.Sprintf("%s round %d: %d %s", a, round, res.status, res.body)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for msg := range errs {
				t.Error(msg)
			}
		}
		r := e.getCluster(c.ID)
		for i := range adapters {
			typ := fmt.Sprintf("Adapter%02dSuccessful", i)
			if got := cond(r, typ); got != "True/RTrue/1" {
				t.Errorf("%s = %s", typ, got)
			}
		}
		if got := cond(r, "Ready"); got != "True/ResourceReady/1" {
			t.Errorf("Ready = %s after 20 concurrent True reports", got)
		}
		if sts := e.statuses(c); len(sts) != 20 {
			t.Errorf("%d statuses stored, want 20", len(sts))
		}
	}, withAdapters(adapters, nil))
}

func TestNodePoolStatuses(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("np-status")
		np := e.createNodePool(c.ID, "pool")
		e.report(np, report("np-configmap", 1, "True")).expect(201)
		r := e.do("GET", np.Href, nil).expect(200).resource()
		if got := cond(r, "Ready"); got != "True/ResourceReady/1" {
			t.Errorf("node pool Ready = %s", got)
		}
		if got := cond(r, "NpConfigmapSuccessful"); got != "True/RTrue/1" {
			t.Errorf("NpConfigmapSuccessful = %s", got)
		}
		e.do("POST", np.Href+"/statuses", report("np-configmap", 1, "True")).expect(201)
		e.do("PUT", base+"/clusters/"+c.ID+"/nodepools/nope/statuses", report("np-configmap", 1, "True")).problem(404, "HYPERFLEET-NTF-001")
		// The cluster is unaffected by node pool reports.
		e.expectCond(c.ID, "Ready", "False/AwaitingAdapters/0")
	})
}

func (e *env) statuses(r resource.Resource) []resource.AdapterStatus {
	e.t.Helper()
	var l resource.List[resource.AdapterStatus]
	e.do("GET", statusPath(r)+"?size=100", nil).expect(200).into(&l)
	if l.Kind != "AdapterStatusList" || int(l.Total) != len(l.Items) || l.Size != len(l.Items) {
		e.t.Fatalf("status list = %+v", l)
	}
	return l.Items
}

func (e *env) statusOf(r resource.Resource, adapter string) resource.AdapterStatus {
	e.t.Helper()
	for _, st := range e.statuses(r) {
		if st.Adapter == adapter {
			return st
		}
	}
	e.t.Fatalf("no status from %s", adapter)
	return resource.AdapterStatus{}
}

func transition(st resource.AdapterStatus, typ string) time.Time {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.LastTransitionTime
		}
	}
	return time.Time{}
}

func withField(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func withoutField(m map[string]any, k string) map[string]any {
	delete(m, k)
	return m
}
