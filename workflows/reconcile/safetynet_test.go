package reconcile

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func allWatched(adapters ...string) map[string]bool {
	out := map[string]bool{}
	for _, a := range adapters {
		out[a] = true
	}
	return out
}

// Contract: an idle Reconciled resource whose adapters' objects are all
// watched waits the watched window (10 h by default) for its safety-net
// round; the watches, not the timer, repair drift. A resource with
// anything unwatched (a transport without a watch, a watch refused) keeps
// the short window.
func TestSafetyNetWindowFollowsWhatIsWatched(t *testing.T) {
	tests := []struct {
		name    string
		watched map[string]bool
		timers  string
		cause   WaitCause
	}{
		{"all watched", allWatched(threeAdapters...), "[10h0m0s]", WaitSafetyNet},
		{"one unwatched", allWatched("landing-zone", "validation"), "[30m0s]", WaitSafetyNetUnwatched},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.watched = tc.watched
			h.states = []ResourceState{reconciledAt(1), gone}
			var during View
			h.env.RegisterDelayedCallback(func() { during = h.view() }, time.Minute)
			h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
			if fmt.Sprint(h.timers) != tc.timers {
				t.Errorf("timers = %v, want %s", h.timers, tc.timers)
			}
			if during.NextRoundCause != tc.cause {
				t.Errorf("state query while waiting: cause %q, want %q", during.NextRoundCause, tc.cause)
			}
			h.rounds(3, 3)
		})
	}
}

// An optional adapter counts: its objects can drift too.
func TestUnwatchedOptionalAdapterKeepsTheShortWindow(t *testing.T) {
	h := newHarness(t)
	h.watched = allWatched(threeAdapters...)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters, Optional: []string{"audit"}})
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("timers = %v, want the unwatched window of 30m", h.timers)
	}
}

func TestSafetyNetWindows(t *testing.T) {
	tests := []struct {
		opts    Options
		watched time.Duration
	}{
		{Options{}, 10 * time.Hour},
		{Options{WatchedStabilityWindow: 2 * time.Hour}, 2 * time.Hour},
		// A watched resource never waits less than an unwatched one.
		{Options{StabilityWindow: 3 * time.Hour, WatchedStabilityWindow: time.Hour}, 3 * time.Hour},
	}
	for _, tc := range tests {
		if got := tc.opts.WithDefaults().WatchedStabilityWindow; got != tc.watched {
			t.Errorf("%+v: watched window %v, want %v", tc.opts, got, tc.watched)
		}
	}
}

// Contract: a time-based precondition is re-evaluated when its answer can
// change, not at the next window: the adapter whose run said when runs
// then, alone.
func TestTimeBasedPreconditionRunsItsAdapterWhenItsAnswerChanges(t *testing.T) {
	h := newHarness(t)
	h.watched = allWatched(threeAdapters...)
	var start time.Time
	h.recheck = func(adapter string, now time.Time) time.Time {
		if start.IsZero() {
			start = now
		}
		if adapter == "validation" && now.Equal(start) {
			return now.Add(7 * time.Minute) // e.g. stableFor(..., 420) not yet true
		}
		return time.Time{}
	}
	h.states = []ResourceState{reconciledAt(1), reconciledAt(1), gone}
	var during View
	h.env.RegisterDelayedCallback(func() { during = h.view() }, time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	if fmt.Sprint(h.timers) != "[7m0s 10h0m0s]" {
		t.Errorf("timers = %v, want the 7m until the precondition changes, then the watched window", h.timers)
	}
	got := h.rounds(3, 1, 3)
	if got[1] != "validation@1" {
		t.Errorf("rounds = %q, want the recheck to run validation alone", got)
	}
	if during.NextRoundCause != WaitTimePrecondition || !during.NextRound.Equal(start.Add(7*time.Minute)) {
		t.Errorf("state query while waiting: next round %s (%q), want %s (%q)", during.NextRound, during.NextRoundCause, start.Add(7*time.Minute), WaitTimePrecondition)
	}
}

// A precondition's change time cuts a backoff short too, and a later one
// leaves it alone.
func TestRecheckShortensOnlyALongerWait(t *testing.T) {
	h := newHarness(t)
	h.recheck = func(adapter string, now time.Time) time.Time { return now.Add(90 * time.Second) }
	h.states = []ResourceState{pendingAt(1), pendingAt(1), reconciledAt(1), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"},
		Options: Options{InitialBackoff: time.Minute, MaxBackoff: 4 * time.Minute}})
	want := []time.Duration{time.Minute, 90 * time.Second, 90 * time.Second}
	if !slices.Equal(h.timers, want) {
		t.Errorf("timers = %v, want %v (backoff 1m, then 2m cut to the recheck at 90s)", h.timers, want)
	}
}

// Both survive continue-as-new: a continued run keeps the long window and
// the pending recheck.
func TestContinueAsNewCarriesWatchedAndRecheck(t *testing.T) {
	h := newHarness(t)
	h.watched = allWatched(threeAdapters...)
	h.recheck = func(adapter string, now time.Time) time.Time { return now.Add(time.Hour) }
	h.states = []ResourceState{reconciledAt(1)}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters, Options: Options{RoundsPerRun: 1}})
	next, _ := h.continuedInput()
	c := next.Carry
	if c == nil {
		t.Fatal("nothing carried")
	}
	for _, a := range threeAdapters {
		if s := c.States[a]; !s.Watched || s.RecheckAt.IsZero() {
			t.Errorf("carried state of %s = %+v, want watched with a recheck time", a, s)
		}
	}
}

// Contract: a resource held back only by a time-based precondition waits
// exactly until it changes, not for a backoff that would re-read an answer
// that cannot have changed.
func TestResourceWaitingOnlyOnTimeWaitsExactlyForIt(t *testing.T) {
	h := newHarness(t)
	h.run = func(adapter string, _ int64) (Summary, error) {
		return Summary{ExecutionStatus: "success", ResourcesSkipped: true, SkipReason: `precondition "stable" not met`}, nil
	}
	first := true
	h.recheck = func(adapter string, now time.Time) time.Time {
		if first {
			first = false
			return now.Add(5 * time.Minute)
		}
		return time.Time{}
	}
	h.states = []ResourceState{pendingAt(1), reconciledAt(1), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if len(h.timers) < 1 || h.timers[0] != 5*time.Minute {
		t.Errorf("timers = %v, want the first wait to be the 5m until the precondition changes (not a 1s backoff)", h.timers)
	}
}

// Contract: a node pool waiting for its cluster goes on when the cluster
// becomes Reconciled (the API's "parent-reconciled" outbox row): its
// adapters not done run at once, not at the end of its backoff.
func TestParentReconciledWakesAWaitingChild(t *testing.T) {
	h := newHarness(t)
	nodePool := Ref{Kind: "NodePool", ID: "np1", ParentID: "c1"}
	h.states = []ResourceState{pendingAt(1), pendingAt(1, "validation"), reconciledAt(1), gone}
	// Nothing done after round 1: a 10-minute backoff, cut short by the
	// notice at 5 minutes.
	h.signalAt(5*time.Minute, Signal{Generation: 1, Reason: ReasonParentReconciled})
	h.exec(Input{Ref: nodePool, Generation: 1, Adapters: threeAdapters,
		Options: Options{InitialBackoff: 10 * time.Minute, MaxBackoff: 20 * time.Minute}})
	got := h.rounds(3, 3, 2, 3)
	if got[1] != "landing-zone@1,validation-job@1,validation@1" {
		t.Errorf("rounds = %q, want the notice to run the adapters not done", got)
	}
	if len(h.readAt) < 2 || h.readAt[1].Sub(h.readAt[0]) != 5*time.Minute {
		t.Errorf("read-backs at %v, want the second round 5m after the first, at the notice (not at the 10m backoff's end)", h.readAt)
	}
	if got := h.counters.get(MetricRounds, "cause="+string(CauseParent), "kind=NodePool"); got != 1 {
		t.Errorf("rounds with cause parent = %d, want 1 (all: %v)", got, h.counters.counts)
	}
}

// A Reconciled child is left alone: upstream-style adapters gate re-runs
// on how long the resource has been Reconciled and report it unavailable
// when they skip, so a run here would make it lapse.
func TestParentReconciledLeavesAReconciledChildAlone(t *testing.T) {
	h := newHarness(t)
	h.watched = allWatched(threeAdapters...)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.signalAt(5*time.Minute, Signal{Generation: 1, Reason: ReasonParentReconciled})
	h.exec(Input{Ref: Ref{Kind: "NodePool", ID: "np1", ParentID: "c1"}, Generation: 1, Adapters: threeAdapters})
	h.rounds(3, 3)
	if len(h.readAt) < 2 || h.readAt[1].Sub(h.readAt[0]) < 8*time.Hour {
		t.Errorf("read-backs at %v, want the second round at the safety net, hours later", h.readAt)
	}
}
