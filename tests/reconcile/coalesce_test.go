//go:build integration

package reconcile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Contract, "Reconciliation": "Rapid successive bumps coalesce: the adapters
// run for the newest generation, and never act on an older one after a
// newer one is known."
func TestRapidPatchesCoalesce(t *testing.T) {
	s := newSystem(t, defaultOptions())
	c := s.createCluster("e2e-coalesce", map[string]any{"nodes": 3})
	s.waitReady(c, 1, 60*time.Second)

	for _, nodes := range []int{4, 5, 6} {
		s.mustDo(http.MethodPatch, path(c), map[string]any{"spec": map[string]any{"nodes": nodes}}, http.StatusOK)
	}
	s.waitReady(c, 4, 60*time.Second)
	for name, st := range s.statuses(c) {
		if st.ObservedGeneration != 4 {
			t.Errorf("%s reported generation %d last, want 4", name, st.ObservedGeneration)
		}
	}

	// Walk the history in order: once a signal has told the workflow about
	// a generation, no adapter activity may be scheduled for an older one.
	known := int64(0)
	finalReports := map[string]int{}
	for _, ev := range s.history(resource.KindCluster, c.ID) {
		if sig := ev.GetWorkflowExecutionSignaledEventAttributes(); sig != nil {
			var in reconcile.Signal
			if err := json.Unmarshal(sig.GetInput().GetPayloads()[0].GetData(), &in); err != nil {
				t.Fatal(err)
			}
			known = max(known, in.Generation)
			continue
		}
		calls := activityCalls(t, []*historypb.HistoryEvent{ev})
		if len(calls) == 0 {
			continue
		}
		call := calls[0]
		if call.Generation < known {
			t.Errorf("%s %s scheduled for generation %d after the workflow knew generation %d", call.Adapter, call.Activity, call.Generation, known)
		}
		if call.Generation == 4 && call.Activity == reconcile.ActivityRun {
			finalReports[call.Adapter]++
		}
	}
	// Each adapter runs at most once for the final generation. It may run
	// zero times for it: a run scheduled for generation 2 or 3 reads the
	// resource when it starts, and when the PATCHes came first it already
	// reports generation 4 (the statuses above), so the signal for 4 finds
	// the adapter settled and schedules nothing.
	for _, a := range clusterAdapters {
		if finalReports[a] > 1 {
			t.Errorf("%s ran %d times for generation 4, want at most once (rapid bumps coalesce)", a, finalReports[a])
		}
	}
	// The API turns Ready at the last report; the workflow records
	// Reconciled after its read-back that follows, so its view may lag.
	var v reconcile.View
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		var err error
		v, err = s.view(resource.KindCluster, c.ID)
		return err == nil && v.Generation == 4 && v.Reconciled, fmt.Sprintf("workflow view = %+v, %v", v, err)
	}, nil)
	t.Logf("rounds: %d for 4 generations", v.Round)
	s.recordHistory("cluster-rapid-patches", resource.KindCluster, c.ID)
}
