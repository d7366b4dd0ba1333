package reconcile

// Search attribute writes and moving live runs to a new release.

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Search attributes are written from the read-back only, when they
// changed; the start's values count as written. Each write is a history
// event, a billable action and a visibility update.
func TestSearchAttributeWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start bool // started with the relay's search attributes
		want  []string
	}{
		{"started with attributes", true,
			[]string{"gen=1 reconciled=true", "gen=2 reconciled=false", "gen=2 reconciled=true"}},
		{"started without", false,
			[]string{"gen=1 reconciled=false", "gen=1 reconciled=true", "gen=2 reconciled=false", "gen=2 reconciled=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// Create: one round pending, then Reconciled; a spec change at
			// generation 2 takes two rounds; then the resource is removed.
			h.states = []ResourceState{pendingAt(1, "validation"), reconciledAt(1), pendingAt(2), reconciledAt(2), gone}
			h.run = func(string, int64) (Summary, error) { return Summary{ExecutionStatus: "success"}, nil }
			if tc.start {
				if err := h.env.SetTypedSearchAttributesOnStart(StartAttributes(cluster, 1)); err != nil {
					t.Fatal(err)
				}
			}
			var writes []string
			h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
				sa := args.Get(0).(temporal.SearchAttributes)
				gen, _ := sa.GetInt64(AttrGeneration)
				rec, _ := sa.GetBool(AttrReconciled)
				writes = append(writes, fmt.Sprintf("gen=%d reconciled=%t", gen, rec))
			}).Return()
			h.signalAt(time.Hour, Signal{Generation: 2})
			h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"},
				Options: Options{StabilityWindow: 2 * time.Hour}})
			if err := h.env.GetWorkflowError(); err != nil {
				t.Fatalf("workflow failed: %v", err)
			}
			if !slices.Equal(writes, tc.want) {
				t.Errorf("search attribute writes =\n  %q\nwant\n  %q", writes, tc.want)
			}
		})
	}
}

// continuedInput is the input a workflow that ended in continue-as-new
// handed to its next run; it fails the test for any other end.
func (h *harness) continuedInput() (Input, *workflow.ContinueAsNewError) {
	h.t.Helper()
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		h.t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		h.t.Fatal(err)
	}
	return next, can
}

// Contract (rolling upgrades): a run pinned to a worker deployment version
// that is no longer current continues as new onto the current one at its
// next safe point, between rounds. An idle run learns it from the task an
// upgrade notice gives it; the notice itself runs no adapter.
func TestUpgradeNoticeMovesAnIdleRunToTheCurrentVersion(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1)}
	h.env.RegisterDelayedCallback(func() {
		h.env.SetTargetWorkerDeploymentVersionChanged(true)
		h.env.SignalWorkflow(SignalName, Signal{Reason: ReasonUpgrade})
	}, time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	next, can := h.continuedInput()
	if can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Errorf("continued with versioning behaviour %v, want AutoUpgrade (the new run starts on the current version)", can.InitialVersioningBehavior)
	}
	if got := h.rounds(1); got[0] != "validation@1" {
		t.Errorf("rounds = %q, want only the first", got)
	}
	if next.Carry == nil || next.Carry.Round != 1 || !next.Carry.Reconciled || next.Carry.All || len(asked(next.Carry)) != 0 {
		t.Errorf("carry = %+v, want round 1, Reconciled, nothing pending", next.Carry)
	}
	if !next.LocalRuns || next.Generation != 1 {
		t.Errorf("continued with %+v", next)
	}
}

// A round under way when the current version changes finishes on the
// version it started on (its activities and read-back are part of this
// run's history); the run moves right after it.
func TestUpgradeWaitsForTheRoundUnderWay(t *testing.T) {
	h := newHarness(t)
	h.delay = time.Second
	h.states = []ResourceState{pendingAt(1, "validation")}
	h.env.RegisterDelayedCallback(func() { h.env.SetTargetWorkerDeploymentVersionChanged(true) }, 500*time.Millisecond)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"landing-zone", "validation"}})
	next, _ := h.continuedInput()
	if got := h.rounds(2); got[0] != "landing-zone@1,validation@1" {
		t.Errorf("rounds = %q, want the round under way completed", got)
	}
	if h.reads != 1 {
		t.Errorf("read back %d times, want once (after the round)", h.reads)
	}
	if len(h.timers) != 0 {
		t.Errorf("timers = %v: the run waited before moving", h.timers)
	}
	// The landing zone is not done: the next run retries it after its
	// backoff, as this run would have.
	if next.Carry == nil || fmt.Sprint(next.Carry.Settled) != "[validation]" || next.Carry.Reconciled {
		t.Errorf("carry = %+v, want the read-back carried", next.Carry)
	}
}

// Without a newer version an upgrade notice changes nothing: no round, no
// continue-as-new, the wait goes on.
func TestUpgradeNoticeWithoutNewVersionRunsNothing(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.signalAt(time.Minute, Signal{Reason: ReasonUpgrade})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow ended with %v", err)
	}
	// The first round, then the self-healing round at the end of the
	// window, which finds the resource gone.
	if got := h.rounds(1, 1); got[1] != "validation@1" || fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("rounds = %q, timers = %v", got, h.timers)
	}
}
