package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/phase"
)

// Optional adapters (contract: "never gate Ready, Reconciled or removal"):
// they run with the rounds and report, but the workflow never waits on
// them: not for their runs, not for them to be done.
//
// Each test ends the workflow with a removal notice while no optional run
// is under way: a run the workflow abandons when it completes would be
// recorded, or not, depending on the test environment's timing.

// failing makes one adapter's runs end failed (its status would say so).
func failing(name string) func(string, int64) (Summary, error) {
	return func(adapter string, _ int64) (Summary, error) {
		if adapter == name {
			return Summary{ExecutionStatus: phase.ExecutionFailed, ErrorPhase: "resources", Error: "step: boom"}, nil
		}
		return Summary{ExecutionStatus: phase.ExecutionSucceeded}, nil
	}
}

// removedAt ends the workflow at a time through the relay's notice.
func (h *harness) removedAt(at time.Duration) {
	h.signalAt(at, Signal{Reason: ReasonRemoved})
}

func TestOptionalAdapterRunsWithTheRoundWithoutHoldingIt(t *testing.T) {
	h := newHarness(t)
	h.slow("informer", 2*time.Minute)
	h.run = failing("informer")
	h.states = []ResourceState{reconciledAt(1), gone}
	h.removedAt(10 * time.Minute)
	var during, after View
	h.env.RegisterDelayedCallback(func() { during = h.view() }, time.Minute)
	h.env.RegisterDelayedCallback(func() { after = h.view() }, 5*time.Minute)
	start := h.env.Now()
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Optional: []string{"informer"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	if got := h.rounds(2); got[0] != "informer@1,validation@1" {
		t.Errorf("first round = %q, want both adapters", got[0])
	}
	// The read-back did not wait two minutes for the optional run, and a
	// failing optional adapter of a Reconciled resource waits for the
	// stability window like everything else: no backoff timer.
	if len(h.readAt) == 0 || h.readAt[0].Sub(start) >= 2*time.Minute {
		t.Errorf("read-backs at %v after a start at %v: the round waited for the optional run", h.readAt, start)
	}
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("timers = %v, want only the stability window", h.timers)
	}
	if !during.Reconciled || during.Phase != PhaseStable || fmt.Sprint(during.Running) != "[informer]" || fmt.Sprint(during.Optional) != "[informer]" {
		t.Errorf("view while the optional run is under way = %+v", during)
	}
	if v := after.Adapters["informer"]; !after.Reconciled || v.Outcome != OutcomeFailed || v.Generation != 1 || !strings.Contains(v.Detail, "boom") || len(after.Running) != 0 {
		t.Errorf("view after the optional run = %+v", after)
	}
}

func TestOptionalAdapterNeverCountsAsProgress(t *testing.T) {
	h := newHarness(t)
	// Round 1: only the optional adapter is done, which is no progress:
	// the required one is retried after the backoff, without the optional
	// one (done). Round 2: the required one is done too.
	h.states = []ResourceState{pendingAt(1, "informer"), reconciledAt(1), gone}
	h.removedAt(10 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Optional: []string{"informer"}})
	got := h.rounds(2, 1)
	want := []string{"informer@1,validation@1", "validation@1"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q", got, want)
	}
	if fmt.Sprint(h.timers) != "[1s 30m0s]" {
		t.Errorf("timers = %v, want one backoff then the stability window", h.timers)
	}
}

func TestOptionalAdapterNotDoneRidesAlongWithRetries(t *testing.T) {
	h := newHarness(t)
	h.run = failing("informer")
	h.states = []ResourceState{pendingAt(1), pendingAt(1), reconciledAt(1), gone}
	h.removedAt(10 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Optional: []string{"informer"}})
	for i, r := range h.rounds(2, 2, 2) {
		if r != "informer@1,validation@1" {
			t.Errorf("round %d = %q, want both adapters", i+1, r)
		}
	}
	// The backoff is the required adapter's: it doubles, then the
	// Reconciled resource waits for the window despite the failing one.
	if fmt.Sprint(h.timers) != "[1s 2s 30m0s]" {
		t.Errorf("timers = %v", h.timers)
	}
}

func TestKindWithOnlyOptionalAdaptersWaitsForTheWindow(t *testing.T) {
	h := newHarness(t)
	// No required adapter: the resource is never Reconciled, and nothing
	// is retried on the backoff.
	h.states = []ResourceState{pendingAt(1), pendingAt(1), gone}
	h.removedAt(40 * time.Minute)
	h.exec(Input{Ref: Ref{Kind: "Channel", ID: "ch1"}, Generation: 1, Adapters: []string{}, Optional: []string{"informer"}})
	if got := h.rounds(1, 1); !slices.Equal(got, []string{"informer@1", "informer@1"}) {
		t.Errorf("rounds = %q", got)
	}
	if fmt.Sprint(h.timers) != "[30m0s 30m0s]" {
		t.Errorf("timers = %v, want stability windows, not backoffs", h.timers)
	}
}

func TestOptionalObjectChangeRunsItAloneWithoutARound(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), reconciledAt(1), gone}
	// During the required adapters' backoff the optional adapter's object
	// is deleted: it runs at once, alone, and the backoff goes on.
	h.signalAt(500*time.Millisecond, Signal{Reason: ReasonObjectChanged, Changed: []string{"informer"},
		Objects: []ObjectChange{{Adapter: "informer", Object: "ConfigMap ns/x"}}})
	h.removedAt(10 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"landing-zone", "validation"}, Optional: []string{"informer"}})
	got := h.rounds(3, 1, 3)
	want := []string{"informer@1,landing-zone@1,validation@1", "informer@1", "informer@1,landing-zone@1,validation@1"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q", got, want)
	}
	if h.reads != 3 {
		t.Errorf("read back %d times, want 3 (the optional run is no round)", h.reads)
	}
	if fmt.Sprint(h.timers) != "[1s 30m0s]" {
		t.Errorf("timers = %v, want the one backoff, not restarted", h.timers)
	}
}

func TestOptionalRunUnderWayRunsAgainAtTheNewestGeneration(t *testing.T) {
	h := newHarness(t)
	h.slow("informer", 2*time.Minute)
	h.states = []ResourceState{reconciledAt(1), reconciledAt(2), gone}
	h.signalAt(30*time.Second, Signal{Generation: 2, Reason: "updated"})
	h.removedAt(10 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Optional: []string{"informer"}})
	// One run at a time: the generation-2 round runs the required adapter
	// and leaves the optional one to run again once its first run ends.
	// (A slow run is recorded when it ends.)
	got := h.rounds(1, 1, 1, 1)
	want := []string{"validation@1", "validation@2", "informer@1", "informer@2"}
	if !slices.Equal(got, want) {
		t.Errorf("runs = %q, want %q", got, want)
	}
}

func TestOptionalListChangesBySignal(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	// A signal with the current lists changes nothing; a new optional
	// adapter runs at once, alone, without a round or a read-back.
	h.signalAt(time.Minute, Signal{Generation: 1, Reason: ReasonResync, Adapters: []string{"validation"}, Optional: []string{}})
	h.signalAt(2*time.Minute, Signal{Generation: 1, Reason: ReasonResync, Adapters: []string{"validation"}, Optional: []string{"informer"}})
	var v View
	h.env.RegisterDelayedCallback(func() { v = h.view() }, 3*time.Minute)
	h.removedAt(10 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if got := h.rounds(1, 1); !slices.Equal(got, []string{"validation@1", "informer@1"}) {
		t.Errorf("runs = %q", got)
	}
	if h.reads != 2 || fmt.Sprint(v.Optional) != "[informer]" || v.Adapters["informer"].Outcome != OutcomeSuccess || !v.Reconciled {
		t.Errorf("reads = %d, view = %+v", h.reads, v)
	}
}

func TestContinueAsNewCarriesOptionalAdapters(t *testing.T) {
	h := newHarness(t)
	h.slow("informer", 2*time.Minute)
	h.states = []ResourceState{pendingAt(1, "validation")}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"landing-zone", "validation"}, Optional: []string{"informer"},
		Options: Options{RoundsPerRun: 1}})
	next, _ := h.continuedInput()
	if fmt.Sprint(next.Optional) != "[informer]" {
		t.Errorf("continued with optional %v", next.Optional)
	}
	// The round made progress (validation is done), so landing-zone is
	// pending; and the optional run under way ends with this run: the
	// next one starts it again.
	if next.Carry == nil || fmt.Sprint(asked(next.Carry)) != "[informer landing-zone]" || next.Carry.All {
		t.Errorf("carry = %+v, want landing-zone and the optional run under way pending", next.Carry)
	}

	// The next run runs them at once, in one round (the progress round
	// the previous run asked for), and the Reconciled resource then waits
	// for the stability window.
	h2 := newHarness(t)
	h2.states = []ResourceState{reconciledAt(1), gone}
	h2.removedAt(10 * time.Minute)
	// More rounds per run this time, and no jitter on the window.
	next.Options.RoundsPerRun, next.Options.StabilityJitter = 100, -1
	h2.exec(next)
	if got := h2.rounds(2); !slices.Equal(got, []string{"informer@1,landing-zone@1"}) {
		t.Errorf("runs of the next run = %q", got)
	}
	if fmt.Sprint(h2.timers) != "[30m0s]" {
		t.Errorf("timers of the next run = %v", h2.timers)
	}
}
