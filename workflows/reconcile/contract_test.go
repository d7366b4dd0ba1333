package reconcile

// The contract: the state query, input checks, jitter, option defaults, ids.

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
)

func TestQueryShowsWhereTheWorkflowStands(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), gone}
	var during View
	h.env.RegisterDelayedCallback(func() { during = h.view() }, 500*time.Millisecond)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if during.Phase != PhaseBackoff || during.Generation != 1 || during.Round != 1 || during.Reconciled ||
		during.Reason != "AdaptersReconciling" || during.NextRound.IsZero() {
		t.Errorf("view during backoff = %+v", during)
	}
	if during.Adapters["validation"].Outcome != OutcomeSuccess || during.Adapters["validation"].Generation != 1 {
		t.Errorf("adapter view = %+v", during.Adapters)
	}
}

func TestInputWithoutResourceIsRejected(t *testing.T) {
	h := newHarness(t)
	h.exec(Input{Generation: 1})
	var app *temporal.ApplicationError
	if err := h.env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != ErrConfig {
		t.Errorf("error = %v, want %s", err, ErrConfig)
	}
}

func TestStabilityWindowIsJittered(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.mockRuns()
	h.env.ExecuteWorkflow(WorkflowName, Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	want := jittered(30*time.Minute, 0.1, cluster.ID, 1)
	if len(h.timers) != 1 || h.timers[0] != want || want == 30*time.Minute {
		t.Errorf("timers = %v, want the jittered window %v", h.timers, want)
	}
}

func TestJitterBounds(t *testing.T) {
	const window = 30 * time.Minute
	lo, hi := window, window
	seen := map[time.Duration]bool{}
	for i := 0; i < 2000; i++ {
		d := jittered(window, 0.1, fmt.Sprintf("c%d", i), int64(i%7))
		if d < 27*time.Minute || d >= 33*time.Minute {
			t.Fatalf("jittered window %v outside ±10%% of %v", d, window)
		}
		lo, hi = min(lo, d), max(hi, d)
		seen[d.Truncate(time.Minute)] = true
	}
	// Spread over the whole band, not bunched.
	if lo > 27*time.Minute+30*time.Second || hi < 33*time.Minute-30*time.Second || len(seen) < 6 {
		t.Errorf("2000 resources spread over [%v, %v] in %d minutes: not spread", lo, hi, len(seen))
	}
	if first, again := jittered(window, 0.1, "c1", 5), jittered(window, 0.1, "c1", 5); first != again {
		t.Error("the same resource and round must get the same wait (workflow code is deterministic)")
	}
	if jittered(window, -1, "c1", 5) != window {
		t.Error("negative jitter means none")
	}
}

func TestProgressed(t *testing.T) {
	cases := []struct {
		before, after []string
		want          bool
	}{
		{nil, nil, false},
		{nil, []string{"a"}, true},
		{[]string{"a"}, []string{"a"}, false},
		{[]string{"a"}, []string{"a", "b"}, true},
		{[]string{"a", "b"}, []string{"a"}, false}, // one regressed: not progress
		{[]string{"a", "b"}, []string{"a", "c"}, true},
	}
	for _, c := range cases {
		if got := progressed(c.before, c.after); got != c.want {
			t.Errorf("progressed(%v, %v) = %v, want %v", c.before, c.after, got, c.want)
		}
	}
}

func TestBackoffTable(t *testing.T) {
	opts := Options{}.WithDefaults()
	cases := []struct {
		failures int
		want     time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {4, 16 * time.Second}, {5, 32 * time.Second}, {6, time.Minute}, {100, time.Minute}}
	for _, c := range cases {
		r := &reconciler{run: runContext{opts: opts}, round: roundState{failures: c.failures}}
		if got := r.backoff(); got != c.want {
			t.Errorf("backoff after %d failures = %v, want %v", c.failures, got, c.want)
		}
	}
}

func TestOptionDefaults(t *testing.T) {
	o := Options{}.WithDefaults()
	if o.StabilityJitter != 0.1 || o.StabilityWindow != 30*time.Minute || o.InitialBackoff != time.Second || o.MaxBackoff != time.Minute {
		t.Errorf("defaults = %+v", o)
	}
	if got := (Options{StabilityJitter: -0.3}).WithDefaults().StabilityJitter; got != -1 {
		t.Errorf("negative jitter = %v, want -1 (none) kept through defaults", got)
	}
	if got := (Options{StabilityJitter: 3}).WithDefaults().StabilityJitter; got != 0.5 {
		t.Errorf("jitter 3 = %v, want capped at 0.5", got)
	}
}

func TestIDsAndEvent(t *testing.T) {
	if got := WorkflowID("NodePool", "np1"); got != "hyperfleet-nodepool-np1" {
		t.Errorf("WorkflowID = %q", got)
	}
	if got := AdapterTaskQueue("landing-zone"); got != "hyperfleet-adapter-landing-zone" {
		t.Errorf("AdapterTaskQueue = %q", got)
	}
	ev := Ref{Kind: "NodePool", ID: "np1", ParentID: "c1"}.Event(3)
	b, _ := json.Marshal(ev)
	want := `{"id":"np1","kind":"NodePool","href":"/api/hyperfleet/v1/clusters/c1/nodepools/np1","generation":3,"owner_references":{"kind":"Cluster","id":"c1","href":"/api/hyperfleet/v1/clusters/c1"}}`
	if string(b) != want {
		t.Errorf("event = %s\nwant   %s", b, want)
	}
}
