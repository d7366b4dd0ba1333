//go:build integration

package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/admission"
	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/relay"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Contract: "changes are handed to Temporal only while the reconcile
// rounds in flight across the fleet are fewer than a window; the rest wait
// in the outbox in commit order, and a read says so (AwaitingAdmission)".
// The window is pinned to 2 here; no worker runs, so a round starts only
// when the test reports for it.
func TestAdmissionHoldsChangesBeyondTheWindow(t *testing.T) {
	w := newWorld(t)
	w.svc.ShowAdmission()
	w.relay = relay.New(relay.Config{Store: w.store, Temporal: w.tc, Registered: registered, Sweep: -1,
		Admission: admission.Config{Initial: 2, Min: 2, Max: 2}, Logger: zerolog.New(zerolog.NewTestWriter(t))})
	ctx := w.run()

	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, w.createCluster(fmt.Sprintf("queued-%d", i)).ID)
	}
	started := func() []string {
		var out []string
		for _, id := range ids {
			if w.workflowExists(resource.KindCluster, id) {
				out = append(out, id)
			}
		}
		return out
	}
	await.Eventually(t, 30*time.Second, "two clusters handed over", func() (bool, string) {
		got := started()
		return len(got) == 2, fmt.Sprintf("%d handed over", len(got))
	})
	// Not a wait for a condition: the window is full, and nothing may be
	// handed over while it stays full.
	time.Sleep(time.Second)
	if got := started(); len(got) != 2 || got[0] != ids[0] || got[1] != ids[1] {
		t.Fatalf("handed over %v with the window full, want the first two of %v (commit order)", got, ids)
	}
	if n := w.pending(); n != 3 {
		t.Errorf("%d outbox rows wait, want 3", n)
	}
	for i, id := range ids {
		r, err := w.svc.Get(ctx, lifecycle.Ref{Kind: resource.KindCluster, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		rec, _ := r.Condition(resource.ConditionReconciled)
		ready, _ := r.Condition(resource.ConditionReady)
		waiting := i >= 2
		if got := rec.Reason == aggregation.ReasonAwaitingAdmission && ready.Reason == aggregation.ReasonAwaitingAdmission; got != waiting {
			t.Errorf("cluster %d: Reconciled reason %q, Ready reason %q; waiting for admission: %v", i, rec.Reason, ready.Reason, waiting)
		}
	}

	// One adapter's report does not start the round: the other
	// registered adapter's first run is still due, and counts.
	report(t, w, ids[0], "validation")
	time.Sleep(time.Second) // nothing may happen: see above
	if w.workflowExists(resource.KindCluster, ids[2]) {
		t.Fatal("the third cluster was handed over after one of two adapters reported: the round's first pass was not over")
	}
	// The round's first pass ends (every registered adapter reported at
	// its generation): one more change is handed over, the next in
	// commit order.
	report(t, w, ids[0], "landing-zone")
	await.Eventually(t, 30*time.Second, "the third cluster handed over", func() (bool, string) {
		return w.workflowExists(resource.KindCluster, ids[2]), fmt.Sprintf("handed over %v", started())
	})
	if w.workflowExists(resource.KindCluster, ids[3]) {
		t.Error("the fourth cluster was handed over too: one started round frees one place")
	}
	// A report of an adapter the kind does not declare starts nothing.
	report(t, w, ids[1], "not-declared")
	time.Sleep(time.Second) // nothing may happen: see above
	if w.workflowExists(resource.KindCluster, ids[3]) {
		t.Error("a report of an undeclared adapter freed the window")
	}
	if st := w.relay.Admission(); st.Window != 2 || st.InFlight != 2 {
		t.Errorf("admission status %+v, want window 2 with 2 in flight", st)
	}
}

// A single change on an idle system is handed over at once: admission
// control holds nothing back while the window has room.
func TestAdmissionHandsASingleChangeOverAtOnce(t *testing.T) {
	w := newWorld(t)
	w.run()
	c := w.createCluster("alone")
	await.Eventually(t, 10*time.Second, "the cluster's workflow started", func() (bool, string) {
		return w.workflowExists(resource.KindCluster, c.ID), "not yet"
	})
	if in, _ := w.started(resource.KindCluster, c.ID); !in.LocalRuns {
		t.Errorf("started with %+v, want local runs of hosted adapters", in)
	}
	if st := w.relay.Admission(); st.InFlight > 1 || st.Window < 1 {
		t.Errorf("admission status %+v", st)
	}
}

// run runs the world's relay until the test ends, nudged by every write,
// and returns a context for the test's calls.
func (w *world) run() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.relay.Run(ctx) }()
	w.t.Cleanup(func() { cancel(); <-done })
	w.svc.OnOutbox(w.relay.Nudge)
	return context.Background()
}

// report stores an adapter's report at the cluster's current generation.
func report(t *testing.T, w *world, id, adapter string) {
	t.Helper()
	now := time.Now().UTC()
	_, err := w.svc.ReportStatus(context.Background(), lifecycle.Ref{Kind: resource.KindCluster, ID: id}, &resource.StatusReport{
		Adapter: adapter, ObservedGeneration: 1, ObservedTime: now,
		Conditions: []resource.ReportCondition{
			{Type: resource.ConditionAvailable, Status: resource.StatusFalse, Reason: "Starting"},
			{Type: resource.ConditionApplied, Status: resource.StatusFalse, Reason: "Starting"},
			{Type: resource.ConditionHealth, Status: resource.StatusTrue, Reason: "Healthy"},
		}})
	if err != nil {
		t.Fatalf("report %s on %s: %v", adapter, id, err)
	}
}
