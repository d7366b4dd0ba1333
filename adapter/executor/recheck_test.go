package executor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/memory"
)

// timedTask waits, in its precondition, for the cluster to have been
// Reconciled for five minutes.
const timedTask = `params:
  - name: clusterId
    source: event.id
    required: true
preconditions:
  - name: getCluster
    api_call:
      url: /clusters/{{ .clusterId }}
    expression: 'stableFor(getCluster.status.conditions, "Reconciled", 300)'
`

// Contract: a run says when a time-based precondition it evaluated gives
// another answer, so the workflow can run the adapter again exactly then.
func TestRunSaysWhenATimeBasedPreconditionChanges(t *testing.T) {
	tests := []struct {
		name       string
		transition time.Time
		status     string
		want       time.Time
	}{
		{"not stable yet", clock.Add(-100 * time.Second), "True", clock.Add(200 * time.Second)},
		{"already stable", clock.Add(-time.Hour), "True", time.Time{}},
		{"not True: only a new report changes it", clock.Add(-100 * time.Second), "False", time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, timedTask)
			h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{
				map[string]any{"type": "Reconciled", "status": tc.status, "last_transition_time": tc.transition.Format(time.RFC3339)}}}}
			st, _, err := h.run(t, event)
			if err != nil {
				t.Fatal(err)
			}
			if d := st.RecheckAt.Sub(tc.want); st.RecheckAt.IsZero() != tc.want.IsZero() || d < 0 || d > time.Millisecond {
				t.Errorf("RecheckAt = %v, want %v", st.RecheckAt, tc.want)
			}
		})
	}
}

// A precondition that does not read the clock gives no recheck time.
func TestRunWithoutTimeBasedPreconditionHasNoRecheck(t *testing.T) {
	h := newHarness(t, statusTask)
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{map[string]any{"type": "Reconciled", "status": "False"}}}}
	st, _, err := h.run(t, event)
	if err != nil {
		t.Fatal(err)
	}
	if !st.RecheckAt.IsZero() {
		t.Errorf("RecheckAt = %v, want none", st.RecheckAt)
	}
}

// unhealthyTransport watches, but its watch stopped working.
type unhealthyTransport struct{ watchingTransport }

func (unhealthyTransport) WatchHealthy() bool { return false }

// Unwatched says why a resource's drift could go unnoticed: it decides the
// safety-net window and the worker's hyperfleet_adapter_objects_watched.
func TestUnwatched(t *testing.T) {
	with := func(tr transport.Transport) func(*Options) {
		return func(o *Options) { o.Transports = map[string]transport.Transport{"kubernetes": tr} }
	}
	noResources := "params:\n  - name: clusterId\n    source: event.id\n    required: true\n"
	tests := []struct {
		name string
		eng  *Engine
		want string // a part of the reason; "" for watched
	}{
		{"a transport that does not watch", newHarness(t, statusTask).engine, "does not watch"},
		{"a watch that stopped", newHarness(t, statusTask, with(unhealthyTransport{watchingTransport{memory.New(nil)}})).engine, "not working"},
		{"a working watch", newHarness(t, statusTask, with(watchingTransport{memory.New(nil)})).engine, ""},
		{"nothing applied", newHarness(t, noResources).engine, ""},
	}
	for _, tc := range tests {
		got := tc.eng.Unwatched()
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Unwatched() = %q, want one naming %q", tc.name, got, tc.want)
		}
	}
}

// BenchmarkTimeBasedPrecondition is the cost of working out when a
// time-based precondition changes (the bisection over time) next to the
// same run with a precondition that does not read the clock.
func BenchmarkTimeBasedPrecondition(b *testing.B) {
	plain := strings.Replace(timedTask, `stableFor(getCluster.status.conditions, "Reconciled", 300)`, `conditionStatus(getCluster.status.conditions, "Reconciled") == "True"`, 1)
	for _, bc := range []struct{ name, task string }{{"clock", timedTask}, {"no-clock", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, bc.task)
			h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{
				map[string]any{"type": "Reconciled", "status": "True", "last_transition_time": clock.Add(-100 * time.Second).Format(time.RFC3339)}}}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := h.engine.RunEvent(context.Background(), event, nil)
				if err != nil {
					b.Fatal(err)
				}
				if (bc.name == "clock") == res.State.RecheckAt.IsZero() {
					b.Fatalf("RecheckAt = %v", res.State.RecheckAt)
				}
			}
		})
	}
}
