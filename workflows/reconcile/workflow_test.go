package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// harness runs the workflow in the SDK's test environment with mocked
// activities and records what it did.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu     sync.Mutex
	calls  []call
	timers []time.Duration
	reads  int
	// states answers ReadResource, one per call; the last repeats.
	states []ResourceState
	// phase overrides an adapter phase's outcome.
	phase func(activityName, adapter string, generation int64) (Summary, error)
	// delay is how long (workflow clock) each adapter phase takes.
	delay time.Duration
}

type call struct {
	activity   string
	adapter    string
	generation int64
}

func (c call) String() string { return fmt.Sprintf("%s/%s@%d", c.adapter, c.activity, c.generation) }

// phaseState is what the mocked phases pass each other as the engine state.
type phaseState struct {
	Generation int64 `json:"generation"`
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment()}
	h.env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.timers = append(h.timers, d)
	})
	// The phases are registered under their names with placeholder bodies;
	// the mocks below replace them.
	h.env.RegisterActivityWithOptions(func(context.Context, PrepareInput) (PhaseResult, error) {
		return PhaseResult{}, errors.New("not mocked")
	}, activity.RegisterOptions{Name: ActivityPrepare})
	for _, name := range []string{ActivityApply, ActivityReport} {
		h.env.RegisterActivityWithOptions(func(context.Context, json.RawMessage) (PhaseResult, error) {
			return PhaseResult{}, errors.New("not mocked")
		}, activity.RegisterOptions{Name: name})
	}
	h.env.RegisterActivityWithOptions(func(context.Context, Ref) (ResourceState, error) {
		return ResourceState{}, errors.New("not mocked")
	}, activity.RegisterOptions{Name: ActivityReadResource})

	h.env.OnActivity(ActivityPrepare, mock.Anything, mock.Anything).AfterFn(h.wait).Return(
		func(ctx context.Context, in PrepareInput) (PhaseResult, error) {
			return h.record(ctx, ActivityPrepare, in.Event.Generation)
		})
	for _, name := range []string{ActivityApply, ActivityReport} {
		h.env.OnActivity(name, mock.Anything, mock.Anything).AfterFn(h.wait).Return(
			func(ctx context.Context, raw json.RawMessage) (PhaseResult, error) {
				var st phaseState
				if err := json.Unmarshal(raw, &st); err != nil {
					return PhaseResult{}, err
				}
				return h.record(ctx, name, st.Generation)
			})
	}
	h.env.OnActivity(ActivityReadResource, mock.Anything, mock.Anything).Return(
		func(context.Context, Ref) (ResourceState, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.states) == 0 {
				return ResourceState{Gone: true}, nil
			}
			st := h.states[min(h.reads, len(h.states)-1)]
			h.reads++
			return st, nil
		})
	return h
}

func (h *harness) wait() time.Duration { return h.delay }

func (h *harness) record(ctx context.Context, name string, generation int64) (PhaseResult, error) {
	adapter := strings.TrimPrefix(activity.GetInfo(ctx).TaskQueue, AdapterTaskQueue(""))
	h.mu.Lock()
	h.calls = append(h.calls, call{activity: name, adapter: adapter, generation: generation})
	phase := h.phase
	h.mu.Unlock()
	summary := Summary{ExecutionStatus: "success"}
	if phase != nil {
		var err error
		if summary, err = phase(name, adapter, generation); err != nil {
			return PhaseResult{}, err
		}
	}
	state, _ := json.Marshal(phaseState{Generation: generation})
	return PhaseResult{State: state, Summary: summary}, nil
}

func (h *harness) run(in Input) {
	h.t.Helper()
	h.env.ExecuteWorkflow(WorkflowName, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
}

func (h *harness) callsOf(activityName string) []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []call
	for _, c := range h.calls {
		if c.activity == activityName {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) view() View {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(QueryName)
	if err != nil {
		h.t.Fatalf("query: %v", err)
	}
	var out View
	if err := v.Get(&out); err != nil {
		h.t.Fatalf("decode view: %v", err)
	}
	return out
}

var cluster = Ref{Kind: "Cluster", ID: "c1"}

func reconciledAt(gen int64) ResourceState {
	return ResourceState{Generation: gen, Reconciled: true, Reason: "ResourceReady"}
}

func pendingAt(gen int64) ResourceState {
	return ResourceState{Generation: gen, Reason: "AdaptersReconciling"}
}

func TestRoundRunsEveryAdapterThenWaitsForStabilityWindow(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), {Gone: true}}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation", "landing-zone"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	for _, phase := range []string{ActivityPrepare, ActivityApply, ActivityReport} {
		got := h.callsOf(phase)
		if len(got) != 4 { // two adapters, two rounds
			t.Errorf("%s ran %d times, want 4 (2 adapters x 2 rounds): %v", phase, len(got), got)
		}
	}
	adapters := map[string]int{}
	for _, c := range h.callsOf(ActivityPrepare) {
		adapters[c.adapter]++
		if c.generation != 1 {
			t.Errorf("%s acted on generation %d, want 1", c, c.generation)
		}
	}
	if adapters["validation"] != 2 || adapters["landing-zone"] != 2 {
		t.Errorf("each adapter runs on its own task queue once per round, got %v", adapters)
	}
	// Contract: "a Reconciled resource is re-run after a configurable
	// stability window (default 30 minutes)".
	if len(h.timers) != 1 || h.timers[0] != 30*time.Minute {
		t.Errorf("timers = %v, want one stability window of 30m", h.timers)
	}
}

func TestBackoffDoublesUpToAboutAMinute(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 8; i++ {
		h.states = append(h.states, pendingAt(1))
	}
	h.states = append(h.states, reconciledAt(1), ResourceState{Gone: true})
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	// Contract: "re-run on a durable backoff (first retry within seconds,
	// capped at about a minute) until it is [Reconciled]".
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute, 30 * time.Minute}
	if fmt.Sprint(h.timers) != fmt.Sprint(want) {
		t.Errorf("timers = %v, want %v", h.timers, want)
	}
	if n := len(h.callsOf(ActivityReport)); n != 10 {
		t.Errorf("report ran %d times, want 10 rounds", n)
	}
}

func TestBackoffResetsAfterReconciled(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), reconciledAt(1), pendingAt(1), {Gone: true}}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"},
		Options: Options{InitialBackoff: time.Second, StabilityWindow: time.Hour}})
	want := []time.Duration{time.Second, time.Hour, time.Second}
	if fmt.Sprint(h.timers) != fmt.Sprint(want) {
		t.Errorf("timers = %v, want %v", h.timers, want)
	}
}

func TestBumpsDuringARoundCoalesceIntoOneNextRound(t *testing.T) {
	h := newHarness(t)
	h.delay = 10 * time.Second
	h.states = []ResourceState{pendingAt(4), reconciledAt(4), {Gone: true}}
	// Three bumps arrive while generation 1's prepare runs.
	for i, at := range []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second} {
		gen := int64(i + 2)
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(SignalName, Signal{Generation: gen, Reason: "updated"})
		}, at)
	}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation", "landing-zone"}})

	var gens []int64
	for _, c := range h.callsOf(ActivityPrepare) {
		gens = append(gens, c.generation)
	}
	// Contract: "Rapid successive bumps coalesce: the adapters run for the
	// newest generation, and never act on an older one after a newer one is
	// known."
	if fmt.Sprint(gens) != "[1 1 4 4 4 4]" {
		t.Errorf("prepare generations = %v, want generation 1 once per adapter, then only 4", gens)
	}
	for _, c := range append(h.callsOf(ActivityApply), h.callsOf(ActivityReport)...) {
		if c.generation != 4 {
			t.Errorf("%s acted on a superseded generation", c)
		}
	}
	if len(h.timers) != 1 || h.timers[0] != 30*time.Minute {
		t.Errorf("no backoff between the superseded round and the next one, timers = %v", h.timers)
	}
}

// preparedPerRound splits the prepare calls into rounds of the given sizes,
// each as sorted "adapter@generation" entries.
func preparedPerRound(h *harness, perRound ...int) []string {
	calls := h.callsOf(ActivityPrepare)
	var out []string
	for _, n := range perRound {
		if len(calls) < n {
			h.t.Fatalf("prepare calls = %v, fewer than the rounds %v", h.callsOf(ActivityPrepare), perRound)
		}
		var names []string
		for _, c := range calls[:n] {
			names = append(names, fmt.Sprintf("%s@%d", c.adapter, c.generation))
		}
		slices.Sort(names)
		out = append(out, strings.Join(names, ","))
		calls = calls[n:]
	}
	if len(calls) != 0 {
		h.t.Errorf("more prepare calls than expected: %v", calls)
	}
	return out
}

var threeAdapters = []string{"landing-zone", "validation", "validation-job"}

func TestRetryRoundRunsOnlyUnsettledAdapters(t *testing.T) {
	h := newHarness(t)
	waiting := pendingAt(1)
	waiting.Settled = []string{"landing-zone", "validation"}
	h.states = []ResourceState{waiting, reconciledAt(1), {Gone: true}}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := preparedPerRound(h, 3, 1, 3)
	want := []string{"landing-zone@1,validation-job@1,validation@1", "validation-job@1", "landing-zone@1,validation-job@1,validation@1"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q (the retry runs only the unsettled adapter; the self-healing round runs all)", got, want)
	}
	if fmt.Sprint(h.timers) != "[1s 30m0s]" {
		t.Errorf("timers = %v", h.timers)
	}
}

func TestRetryWithEveryAdapterSettledRunsAll(t *testing.T) {
	// Every adapter says done but the API does not say Reconciled (say a
	// registration the workers do not know): narrowing would run nothing.
	h := newHarness(t)
	stuck := pendingAt(1)
	stuck.Settled = threeAdapters
	h.states = []ResourceState{stuck, {Gone: true}}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	if n := len(h.callsOf(ActivityPrepare)); n != 6 {
		t.Errorf("prepare ran %d times, want every adapter in both rounds", n)
	}
}

func TestBumpDuringBackoffRunsEveryAdapter(t *testing.T) {
	h := newHarness(t)
	waiting := pendingAt(1)
	waiting.Settled = []string{"landing-zone", "validation"}
	h.states = []ResourceState{waiting, reconciledAt(2), {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 2, Reason: "updated"})
	}, 500*time.Millisecond) // inside the 1s backoff
	h.run(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := preparedPerRound(h, 3, 3, 3)
	if got[1] != "landing-zone@2,validation-job@2,validation@2" {
		t.Errorf("round after the bump = %q, want every adapter at generation 2", got[1])
	}
}

func TestWakeDuringBackoffRunsEveryAdapter(t *testing.T) {
	h := newHarness(t)
	waiting := pendingAt(1)
	waiting.Settled = []string{"landing-zone", "validation"}
	h.states = []ResourceState{waiting, reconciledAt(1), {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 1, Reason: ReasonChildRemoved})
	}, 500*time.Millisecond)
	h.run(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	if n := len(h.callsOf(ActivityPrepare)); n != 9 {
		t.Errorf("prepare ran %d times (%v), want every adapter in each of 3 rounds", n, h.callsOf(ActivityPrepare))
	}
}

func TestReadBackNewerGenerationStartsNextRound(t *testing.T) {
	// The signal for generation 2 was lost (or is late): the read-back sees
	// it and the next round acts on it without waiting.
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(2), reconciledAt(2), {Gone: true}}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	var gens []int64
	for _, c := range h.callsOf(ActivityReport) {
		gens = append(gens, c.generation)
	}
	if fmt.Sprint(gens) != "[1 2 2]" {
		t.Errorf("report generations = %v, want [1 2 2]", gens)
	}
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("timers = %v, want only the stability window", h.timers)
	}
}

func TestSignalDuringStabilityWindowStartsRoundAtOnce(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), reconciledAt(2), {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 2, Reason: "updated"})
	}, 5*time.Minute)
	start := h.env.Now()
	var secondRound time.Time
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == ActivityPrepare && len(h.callsOf(ActivityPrepare)) == 1 {
			secondRound = h.env.Now()
		}
	})
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if got := secondRound.Sub(start); got < 5*time.Minute || got > 5*time.Minute+time.Second {
		t.Errorf("second round started %v after the first, want right after the 5m signal", got)
	}
	if gens := h.callsOf(ActivityReport); len(gens) != 3 || gens[1].generation != 2 {
		t.Errorf("reports = %v, want generation 2 in the second round", gens)
	}
}

func TestSameGenerationSignalDoesNotWake(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(3), {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 3, Reason: ReasonResync})
		h.env.SignalWorkflow(SignalName, Signal{Generation: 2, Reason: "updated"}) // late and old
	}, time.Minute)
	h.run(Input{Ref: cluster, Generation: 3, Adapters: []string{"validation"}})
	if n := len(h.callsOf(ActivityPrepare)); n != 2 {
		t.Errorf("prepare ran %d times, want 2 (start, then after the stability window)", n)
	}
	for _, c := range h.calls {
		if c.generation != 3 {
			t.Errorf("%s: an older generation was acted on", c)
		}
	}
}

func TestRemovedSignalFinishesWithoutRunningAdapters(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 2, Reason: ReasonRemoved})
	}, time.Minute)
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("a removed resource completes the workflow, got %v", err)
	}
	if n := len(h.callsOf(ActivityPrepare)); n != 1 {
		t.Errorf("prepare ran %d times, want only the first round", n)
	}
	if h.reads != 2 {
		t.Errorf("read the resource %d times, want 2", h.reads)
	}
	if v := h.view(); v.Phase != PhaseFinished {
		t.Errorf("phase = %q, want finished", v.Phase)
	}
}

func TestChildRemovedWakesADeletingCluster(t *testing.T) {
	h := newHarness(t)
	deleting := ResourceState{Generation: 2, Deleting: true, Reason: "AwaitingChildDeletion"}
	h.states = []ResourceState{deleting, {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 2, Reason: ReasonChildRemoved})
	}, time.Second) // inside the 2s backoff
	start := h.env.Now()
	h.run(Input{Ref: cluster, Generation: 2, Adapters: []string{"landing-zone"}})
	if n := len(h.callsOf(ActivityReport)); n != 2 {
		t.Errorf("report ran %d times, want 2", n)
	}
	if took := h.env.Now().Sub(start); took >= 2*time.Second {
		t.Errorf("the second round waited for the backoff (%v) instead of the signal", took)
	}
}

func TestGoneOnFirstReadCompletes(t *testing.T) {
	h := newHarness(t)
	h.phase = func(name, _ string, _ int64) (Summary, error) {
		return Summary{ExecutionStatus: "success", Gone: true, ResourcesSkipped: true, SkipReason: "resource not found"}, nil
	}
	h.run(Input{Ref: Ref{Kind: "NodePool", ID: "np1", ParentID: "c1"}, Generation: 2, Adapters: []string{"nodepool-config"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if n := len(h.callsOf(ActivityApply)); n != 0 {
		t.Errorf("apply ran %d times for a gone resource", n)
	}
	if v := h.view(); v.Adapters["nodepool-config"].Outcome != OutcomeGone {
		t.Errorf("adapter outcome = %+v, want gone", v.Adapters["nodepool-config"])
	}
}

func TestSkippedPreconditionsSkipApplyButStillReport(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), {Gone: true}}
	h.phase = func(name, _ string, _ int64) (Summary, error) {
		return Summary{ExecutionStatus: "success", ResourcesSkipped: true, SkipReason: "landingZoneReady not met"}, nil
	}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"nodepool-config"}})
	if n := len(h.callsOf(ActivityApply)); n != 0 {
		t.Errorf("apply ran %d times although preconditions were not met", n)
	}
	if n := len(h.callsOf(ActivityReport)); n != 2 {
		t.Errorf("report ran %d times, want once per round", n)
	}
	if v := h.view(); v.Adapters["nodepool-config"].Outcome != OutcomeSkipped || v.Adapters["nodepool-config"].Detail != "landingZoneReady not met" {
		t.Errorf("view = %+v", v.Adapters)
	}
}

func TestPrepareThatAppliedSkipsApply(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), {Gone: true}}
	h.phase = func(name, adapter string, _ int64) (Summary, error) {
		// validation has no resources: its Prepare ran the resources phase.
		return Summary{ExecutionStatus: "success", Applied: name == ActivityPrepare && adapter == "validation"}, nil
	}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation", "landing-zone"}})
	var applied []string
	for _, c := range h.callsOf(ActivityApply) {
		applied = append(applied, c.adapter)
	}
	if fmt.Sprint(applied) != "[landing-zone landing-zone]" {
		t.Errorf("apply ran for %v, want landing-zone only, once per round", applied)
	}
	if n := len(h.callsOf(ActivityReport)); n != 4 {
		t.Errorf("report ran %d times, want 2 adapters x 2 rounds", n)
	}
}

func TestAdapterErrorDoesNotStopOtherAdaptersOrTheWorkflow(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), reconciledAt(1), {Gone: true}}
	h.phase = func(name, adapter string, _ int64) (Summary, error) {
		if adapter == "broken" && name == ActivityPrepare {
			return Summary{}, temporal.NewNonRetryableApplicationError("param clusterId: event.id missing", ErrConfig, nil)
		}
		return Summary{ExecutionStatus: "success"}, nil
	}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"broken", "validation"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var okReports, brokenPrepares int
	for _, c := range h.calls {
		if c.adapter == "validation" && c.activity == ActivityReport {
			okReports++
		}
		if c.adapter == "broken" && c.activity == ActivityPrepare {
			brokenPrepares++
		}
	}
	// Non-retryable: one attempt per round, not five.
	if okReports != 3 || brokenPrepares != 3 {
		t.Errorf("validation reported %d times, broken prepared %d times; want 3 rounds each", okReports, brokenPrepares)
	}
	v := h.view()
	if got := v.Adapters["broken"]; got.Outcome != OutcomeError || !strings.Contains(got.Detail, "event.id missing") {
		t.Errorf("broken adapter view = %+v", got)
	}
}

func TestRetryableActivityFailureIsRetried(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), {Gone: true}}
	attempts := 0
	h.phase = func(name, _ string, _ int64) (Summary, error) {
		if name == ActivityReport {
			attempts++
			if attempts < 3 {
				return Summary{}, errors.New("PUT status: 503 Service Unavailable")
			}
		}
		return Summary{ExecutionStatus: "success", Reported: true}, nil
	}
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if v := h.view(); v.Adapters["validation"].Outcome != OutcomeSuccess {
		t.Errorf("view = %+v, want success after retries", v.Adapters)
	}
	if attempts != 4 { // 3 in round one (2 failures), 1 in round two
		t.Errorf("report attempts = %d, want 4", attempts)
	}
}

func TestAdapterListChangeWakesAndIsUsed(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), reconciledAt(1), {Gone: true}}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 1, Reason: ReasonResync, Adapters: []string{"validation", "landing-zone"}})
	}, time.Minute)
	start := h.env.Now()
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if took := h.env.Now().Sub(start); took > 32*time.Minute {
		t.Errorf("took %v: the registration change should start a round at once, not after the stability window", took)
	}
	var second []string
	for _, c := range h.callsOf(ActivityPrepare)[1:] {
		second = append(second, c.adapter)
	}
	if len(second) < 2 || !strings.Contains(strings.Join(second, ","), "landing-zone") {
		t.Errorf("after the registration change, prepares = %v, want landing-zone included", second)
	}
	if h.timers[0] != 30*time.Minute || len(h.timers) != 2 {
		t.Errorf("timers = %v: the change should have interrupted the first stability window", h.timers)
	}
}

func TestContinueAsNewCarriesState(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), pendingAt(1), pendingAt(1)}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalName, Signal{Generation: 2, Reason: "updated"})
	}, 2*time.Second+10*time.Millisecond) // arrives while the run ends
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Options: Options{RoundsPerRun: 2}})
	err := h.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != WorkflowName {
		t.Errorf("continued as %q", can.WorkflowType.Name)
	}
	var next Input
	if err := decodeArgs(can, &next); err != nil {
		t.Fatal(err)
	}
	if next.Ref != cluster || next.Generation != 2 || next.Carry == nil || next.Carry.Round != 2 || next.Carry.Failures != 2 {
		t.Errorf("continued with %+v carry %+v, want the generation-2 signal and 2 rounds carried", next, next.Carry)
	}
	if next.Options.RoundsPerRun != 2 || next.Options.StabilityWindow != 30*time.Minute {
		t.Errorf("options not carried: %+v", next.Options)
	}
	if next.Carry.Adapters["validation"].Outcome != OutcomeSuccess {
		t.Errorf("adapter views not carried: %+v", next.Carry.Adapters)
	}
}

func TestContinuedRunResumesRoundCount(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(2), {Gone: true}}
	h.run(Input{Ref: cluster, Generation: 2, Adapters: []string{"validation"},
		Carry: &Carry{Round: 200, Failures: 3, Adapters: map[string]AdapterView{"validation": {Generation: 1, Outcome: OutcomeSuccess}}}})
	if v := h.view(); v.Round != 202 || v.Adapters["validation"].Generation != 2 {
		t.Errorf("view = %+v, want round 202 and fresh adapter view", v)
	}
}

func TestQueryShowsWhereTheWorkflowStands(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), {Gone: true}}
	var during View
	h.env.RegisterDelayedCallback(func() { during = h.view() }, time.Second)
	h.run(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
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
	h.run(Input{Generation: 1})
	var app *temporal.ApplicationError
	if err := h.env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != ErrConfig {
		t.Errorf("error = %v, want %s", err, ErrConfig)
	}
}

func TestBackoffTable(t *testing.T) {
	opts := Options{}.WithDefaults()
	cases := []struct {
		failures int
		want     time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {4, 16 * time.Second}, {5, 32 * time.Second}, {6, time.Minute}, {100, time.Minute}}
	for _, c := range cases {
		r := &reconciler{opts: opts, failures: c.failures}
		if got := r.backoff(); got != c.want {
			t.Errorf("backoff after %d failures = %v, want %v", c.failures, got, c.want)
		}
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

func decodeArgs(can *workflow.ContinueAsNewError, into *Input) error {
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, into)
}
