package reconcile

import (
	"context"
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
// activities and records what it did. Compatibility with the previous
// release is covered by replaying its histories (replay_test.go).
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu     sync.Mutex
	calls  []call
	timers []time.Duration
	reads  int
	// states answers ReadResource, one per call; the last repeats.
	states []ResourceState
	// run overrides an adapter run's outcome.
	run func(adapter string, generation int64) (Summary, error)
	// delay is how long (workflow clock) each adapter run takes.
	delay time.Duration
	// seen is what each adapter's run reports it discovered; watched,
	// whether its worker watches what it applies.
	seen    map[string]map[string]string
	watched map[string]bool
	// recheck, when set, is the RecheckAt of an adapter's run.
	recheck func(adapter string, now time.Time) time.Time
	// mocked says the catch-all mock of adapter runs is in place; mocks
	// of single adapters (slow) must be registered before it.
	mocked bool
	// readAt is the workflow time of each read-back.
	readAt []time.Time
	// counters captures the workflow's counters (metrics_test.go).
	counters *counters
	// notHosted are adapters whose local runs answer that the worker
	// does not host them; refused records each such answer.
	notHosted map[string]bool
	refused   []string
}

type call struct {
	adapter    string
	generation int64
	// local says the run was a local activity.
	local bool
}

func (c call) String() string { return fmt.Sprintf("%s@%d", c.adapter, c.generation) }

func newHarness(t *testing.T) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	c := &counters{}
	suite.SetMetricsHandler(c.handler(nil))
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment(), counters: c}
	h.env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.timers = append(h.timers, d)
	})
	// Registered under their names with placeholder bodies; the mocks below
	// replace them.
	h.env.RegisterActivityWithOptions(func(context.Context, RunInput) (RunResult, error) {
		return RunResult{}, errors.New("not mocked")
	}, activity.RegisterOptions{Name: ActivityRun})
	h.env.RegisterActivityWithOptions(func(context.Context, Ref) (ResourceState, error) {
		return ResourceState{}, errors.New("not mocked")
	}, activity.RegisterOptions{Name: ActivityReadResource})

	h.env.OnActivity(ActivityReadResource, mock.Anything, mock.Anything).Return(
		func(context.Context, Ref) (ResourceState, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.states) == 0 {
				return ResourceState{Gone: true}, nil
			}
			st := h.states[min(h.reads, len(h.states)-1)]
			h.reads++
			h.readAt = append(h.readAt, h.env.Now())
			return st, nil
		})
	return h
}

// runActivity is the mocked adapter run: it records the call and answers
// with run's summary (success by default), seen, watched and recheck. The
// whole body holds the lock: parallel adapters' runs call the tests'
// callbacks concurrently, and those keep state of their own.
func (h *harness) runActivity(ctx context.Context, in RunInput) (RunResult, error) {
	info := activity.GetInfo(ctx)
	adapter := strings.TrimPrefix(info.TaskQueue, AdapterTaskQueue(""))
	if info.IsLocalActivity {
		adapter = in.Adapter
	}
	now := h.env.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if info.IsLocalActivity && h.notHosted[adapter] {
		h.refused = append(h.refused, adapter)
		return RunResult{Adapter: adapter, NotHosted: true}, nil
	}
	h.calls = append(h.calls, call{adapter: adapter, generation: in.Event.Generation, local: info.IsLocalActivity})
	summary := Summary{ExecutionStatus: "success"}
	if h.run != nil {
		var err error
		if summary, err = h.run(adapter, in.Event.Generation); err != nil {
			return RunResult{}, err
		}
	}
	res := RunResult{Summary: summary, Seen: h.seen[adapter], Watched: h.watched[adapter]}
	if h.recheck != nil {
		res.RecheckAt = h.recheck(adapter, now)
	}
	return res, nil
}

// mockRuns puts the catch-all mock of adapter runs in place (each run
// takes delay on the workflow clock).
func (h *harness) mockRuns() {
	if h.mocked {
		return
	}
	h.mocked = true
	h.env.OnActivity(ActivityRun, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return h.delay }).Return(h.runActivity)
}

// slow makes every run of one adapter take d on the workflow clock; call
// it before exec.
func (h *harness) slow(adapter string, d time.Duration) {
	h.t.Helper()
	if h.mocked {
		h.t.Fatal("slow must come before the workflow runs")
	}
	h.env.OnActivity(ActivityRun, mock.MatchedBy(func(ctx context.Context) bool {
		return activity.GetInfo(ctx).TaskQueue == AdapterTaskQueue(adapter)
	}), mock.Anything).After(d).Return(h.runActivity)
}

// exec runs the workflow to its end, with no jitter unless the input says
// otherwise.
func (h *harness) exec(in Input) {
	h.t.Helper()
	if in.Options.StabilityJitter == 0 {
		in.Options.StabilityJitter = -1
	}
	h.mockRuns()
	h.env.ExecuteWorkflow(WorkflowName, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
}

func (h *harness) signalAt(at time.Duration, s Signal) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalName, s) }, at)
}

// rounds splits the adapter runs into rounds of the given sizes, each as
// sorted "adapter@generation" entries.
func (h *harness) rounds(perRound ...int) []string {
	h.t.Helper()
	h.mu.Lock()
	calls := slices.Clone(h.calls)
	h.mu.Unlock()
	var out []string
	for _, n := range perRound {
		if len(calls) < n {
			h.t.Fatalf("runs = %v, fewer than the rounds %v", h.calls, perRound)
		}
		var names []string
		for _, c := range calls[:n] {
			names = append(names, c.String())
		}
		slices.Sort(names)
		out = append(out, strings.Join(names, ","))
		calls = calls[n:]
	}
	if len(calls) != 0 {
		h.t.Errorf("more runs than expected: %v", calls)
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

var threeAdapters = []string{"landing-zone", "validation", "validation-job"}

func reconciledAt(gen int64) ResourceState {
	return ResourceState{Generation: gen, Reconciled: true, Reason: "ResourceReady"}
}

func pendingAt(gen int64, settled ...string) ResourceState {
	return ResourceState{Generation: gen, Reason: "AdaptersReconciling", Settled: settled}
}

var gone = ResourceState{Gone: true}

func TestRoundRunsEveryAdapterOnceThenWaitsForStabilityWindow(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation", "landing-zone"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	// One activity per adapter per round, each on its own task queue.
	got := h.rounds(2, 2)
	want := []string{"landing-zone@1,validation@1", "landing-zone@1,validation@1"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q", got, want)
	}
	// Contract: "a Reconciled resource is re-run after a configurable
	// stability window (default 30 minutes)".
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("timers = %v, want one stability window of 30m", h.timers)
	}
}

func TestRoundWithoutProgressBacksOffDoublingToAMinute(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 8; i++ {
		h.states = append(h.states, pendingAt(1))
	}
	h.states = append(h.states, reconciledAt(1), gone)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	// Contract: "re-run on a durable backoff (first retry within seconds,
	// capped at about a minute) until it is [Reconciled]".
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute, 30 * time.Minute}
	if fmt.Sprint(h.timers) != fmt.Sprint(want) {
		t.Errorf("timers = %v, want %v", h.timers, want)
	}
	if n := len(h.calls); n != 10 {
		t.Errorf("ran %d times, want 10 rounds", n)
	}
}

func TestBackoffResetsAfterReconciled(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), reconciledAt(1), pendingAt(1), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"},
		Options: Options{InitialBackoff: time.Second, StabilityWindow: time.Hour}})
	want := []time.Duration{time.Second, time.Hour, time.Second}
	if fmt.Sprint(h.timers) != fmt.Sprint(want) {
		t.Errorf("timers = %v, want %v", h.timers, want)
	}
}

// A chain of dependent adapters: each round after which one more adapter is
// done runs the rest at once; no timer is started until a round makes no
// progress.
func TestProgressRunsTheAdaptersNotDoneAtOnce(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{
		pendingAt(1, "landing-zone"),               // round 1: the landing zone is done
		pendingAt(1, "landing-zone", "validation"), // round 2: validation too
		pendingAt(1, "landing-zone", "validation"), // round 3: no progress
		reconciledAt(1),                            // round 4, after the backoff
		gone,
	}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := h.rounds(3, 2, 1, 1, 3)
	want := []string{"landing-zone@1,validation-job@1,validation@1", "validation-job@1,validation@1", "validation-job@1", "validation-job@1",
		"landing-zone@1,validation-job@1,validation@1"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q", got, want)
	}
	// Rounds 1 and 2 made progress: no timer. Round 3 did not: 1s. Then the
	// stability window.
	if fmt.Sprint(h.timers) != "[1s 30m0s]" {
		t.Errorf("timers = %v, want [1s 30m0s]", h.timers)
	}
}

func TestProgressResetsTheBackoff(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), pendingAt(1), pendingAt(1, "validation"), pendingAt(1, "validation"), reconciledAt(1), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"landing-zone", "validation"}})
	// 1s, 2s without progress; progress; then the backoff starts over at 1s.
	if fmt.Sprint(h.timers) != "[1s 2s 1s 30m0s]" {
		t.Errorf("timers = %v, want [1s 2s 1s 30m0s]", h.timers)
	}
}

func TestBackoffWithEveryAdapterDoneRunsAll(t *testing.T) {
	// Every adapter says done but the API does not say Reconciled (say a
	// registration the workers do not know): narrowing would run nothing.
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1, threeAdapters...), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	if got := h.rounds(3, 3); got[1] != "landing-zone@1,validation-job@1,validation@1" {
		t.Errorf("second round = %q, want every adapter", got[1])
	}
}

func TestBumpsDuringARoundCoalesceIntoOneNextRound(t *testing.T) {
	h := newHarness(t)
	h.delay = 10 * time.Second
	h.states = []ResourceState{pendingAt(4), reconciledAt(4), gone}
	// Three bumps arrive while generation 1's round runs.
	for i, at := range []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second} {
		h.signalAt(at, Signal{Generation: int64(i + 2), Reason: "updated"})
	}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation", "landing-zone"}})
	// Contract: "Rapid successive bumps coalesce: the adapters run for the
	// newest generation, and never act on an older one after a newer one is
	// known."
	got := h.rounds(2, 2, 2)
	want := []string{"landing-zone@1,validation@1", "landing-zone@4,validation@4", "landing-zone@4,validation@4"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q", got, want)
	}
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("no backoff between the superseded round and the next one, timers = %v", h.timers)
	}
}

func TestBumpDuringBackoffRunsEveryAdapter(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1, "landing-zone", "validation"), pendingAt(1, "landing-zone", "validation"), reconciledAt(2), gone}
	h.signalAt(500*time.Millisecond, Signal{Generation: 2, Reason: "updated"}) // inside the backoff after round 2
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := h.rounds(3, 1, 3, 3)
	if got[2] != "landing-zone@2,validation-job@2,validation@2" {
		t.Errorf("round after the bump = %q, want every adapter at generation 2", got[2])
	}
}

// Contract: a round after which every adapter not done waits only on
// objects its worker watches backs off ten initial backoffs, not one: the
// watch reports their readiness. An adapter not done for another reason
// (its precondition not met, nothing applied, nothing watched) keeps the
// usual backoff.
func TestWaitOnWatchedObjectsBacksOffLonger(t *testing.T) {
	job := map[string]map[string]string{"validation-job": {"Job c1/validate": "d1"}}
	for _, tc := range []struct {
		name    string
		watched map[string]bool
		seen    map[string]map[string]string
		skipped string
		want    string
	}{
		{"the Job is watched", map[string]bool{"validation-job": true}, job, "", "[10s 10s 30m0s]"},
		{"the Job is not watched", nil, job, "", "[1s 2s 30m0s]"},
		{"watched, but nothing applied", map[string]bool{"validation-job": true}, nil, "", "[1s 2s 30m0s]"},
		{"another adapter waits on its precondition", map[string]bool{"validation-job": true}, job, "landing-zone", "[1s 2s 30m0s]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.seen, h.watched = tc.seen, tc.watched
			if tc.skipped != "" {
				h.run = func(adapter string, _ int64) (Summary, error) {
					if adapter == tc.skipped {
						return Summary{ExecutionStatus: "success", ResourcesSkipped: true, SkipReason: "precondition not met"}, nil
					}
					return Summary{ExecutionStatus: "success"}, nil
				}
			}
			// Validation is done after round 1 (the landing zone too, unless
			// its precondition is not met); the rest after the second retry.
			done := []string{"landing-zone", "validation"}
			if tc.skipped != "" {
				done = []string{"validation"}
			}
			h.states = []ResourceState{pendingAt(1, done...), pendingAt(1, done...), pendingAt(1, done...), reconciledAt(1), gone}
			h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
			if got := fmt.Sprint(h.timers); got != tc.want {
				t.Errorf("timers = %v, want %v", got, tc.want)
			}
		})
	}
}

// Contract: readiness and drift of what adapters applied wake the owning
// workflow: the round runs the adapter whose objects changed, at once.
func TestObjectChangeWakesTheBackoffForThatAdapter(t *testing.T) {
	h := newHarness(t)
	// Round 1 finishes the landing zone and validation; round 2 creates
	// the Job, which is not complete yet: no progress, a 1s backoff. The
	// Job completes at 200ms.
	h.states = []ResourceState{pendingAt(1, "landing-zone", "validation"), pendingAt(1, "landing-zone", "validation"), reconciledAt(1), gone}
	h.signalAt(200*time.Millisecond, Signal{Reason: ReasonObjectChanged, Changed: []string{"validation-job"}, Detail: "Job c1/validate status"})
	start := h.env.Now()
	var started []time.Duration
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == ActivityRun {
			started = append(started, h.env.Now().Sub(start))
		}
	})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := h.rounds(3, 1, 1, 3)
	if got[2] != "validation-job@1" {
		t.Errorf("woken round = %q, want validation-job alone", got[2])
	}
	if len(started) < 5 || started[4] >= time.Second {
		t.Errorf("runs started at %v: the woken round waited for the backoff", started)
	}
}

func TestObjectChangeOfAReconciledResourceRunsOnlyThatAdapter(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), reconciledAt(1), gone}
	h.signalAt(5*time.Minute, Signal{Reason: ReasonObjectChanged, Changed: []string{"landing-zone"}, Detail: "ConfigMap c1/cluster-info deleted"})
	h.signalAt(6*time.Minute, Signal{Reason: ReasonObjectChanged, Changed: []string{"not-registered"}})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := h.rounds(3, 1, 3)
	if got[1] != "landing-zone@1" {
		t.Errorf("round after the drift = %q, want landing-zone alone (no stability-window round)", got[1])
	}
}

// A burst of updates often ends in the state a round already read (the
// leading notice ran the round, the trailing one reports what it saw): a
// notice for a state the adapter's last run saw runs nothing.
func TestObjectChangeInAStateAlreadySeenRunsNothing(t *testing.T) {
	h := newHarness(t)
	h.seen = map[string]map[string]string{"landing-zone": {"ConfigMap c1/info": "d1"}}
	h.states = []ResourceState{reconciledAt(1), reconciledAt(1), reconciledAt(1), gone}
	seen := ObjectChange{Adapter: "landing-zone", Object: "ConfigMap c1/info", Digest: "d1"}
	edited := ObjectChange{Adapter: "landing-zone", Object: "ConfigMap c1/info", Digest: "d2"}
	deleted := ObjectChange{Adapter: "landing-zone", Object: "ConfigMap c1/info"}
	h.signalAt(5*time.Minute, Signal{Reason: ReasonObjectChanged, Changed: []string{"landing-zone"}, Objects: []ObjectChange{seen}})
	h.signalAt(6*time.Minute, Signal{Reason: ReasonObjectChanged, Changed: []string{"landing-zone"}, Objects: []ObjectChange{edited}})
	h.signalAt(7*time.Minute, Signal{Reason: ReasonObjectChanged, Changed: []string{"landing-zone"}, Objects: []ObjectChange{deleted}})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	got := h.rounds(3, 1, 1, 3)
	if got[1] != "landing-zone@1" || got[2] != "landing-zone@1" {
		t.Errorf("rounds = %q, want one landing-zone round for the edit and one for the deletion, none for the state already seen", got)
	}
}

func TestSignalsWithoutChangeRunNoRound(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(3), gone}
	h.signalAt(time.Minute, Signal{Generation: 3, Reason: ReasonResync, Adapters: []string{"validation"}})
	h.signalAt(2*time.Minute, Signal{Generation: 2, Reason: "updated"}) // late and old
	h.signalAt(3*time.Minute, Signal{Reason: ReasonChildRemoved})       // the cluster is not deleting
	h.signalAt(4*time.Minute, Signal{Reason: ReasonObjectChanged})      // names no adapter
	h.exec(Input{Ref: cluster, Generation: 3, Adapters: []string{"validation"}})
	if got := h.rounds(1, 1); got[1] != "validation@3" {
		t.Errorf("rounds = %q", got)
	}
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("timers = %v: a signal without change interrupted the stability window", h.timers)
	}
}

func TestChildRemovedWakesADeletingCluster(t *testing.T) {
	h := newHarness(t)
	deleting := ResourceState{Generation: 2, Deleting: true, Reason: "AwaitingChildDeletion"}
	h.states = []ResourceState{deleting, gone}
	h.signalAt(500*time.Millisecond, Signal{Generation: 2, Reason: ReasonChildRemoved}) // inside the 1s backoff
	start := h.env.Now()
	h.exec(Input{Ref: cluster, Generation: 2, Adapters: []string{"landing-zone"}})
	if n := len(h.calls); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
	if took := h.env.Now().Sub(start); took >= time.Second {
		t.Errorf("the second round waited for the backoff (%v) instead of the signal", took)
	}
}

func TestRemovedSignalFinishesWithoutRunningAdapters(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.signalAt(time.Minute, Signal{Generation: 2, Reason: ReasonRemoved})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("a removed resource completes the workflow, got %v", err)
	}
	if n := len(h.calls); n != 1 {
		t.Errorf("ran %d times, want only the first round", n)
	}
	if h.reads != 2 {
		t.Errorf("read the resource %d times, want 2", h.reads)
	}
	if v := h.view(); v.Phase != PhaseFinished {
		t.Errorf("phase = %q, want finished", v.Phase)
	}
}

func TestReadBackNewerGenerationStartsNextRound(t *testing.T) {
	// The signal for generation 2 was lost (or is late): the read-back sees
	// it and the next round acts on it without waiting.
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(2), reconciledAt(2), gone}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if got := h.rounds(1, 1, 1); fmt.Sprint(got) != "[validation@1 validation@2 validation@2]" {
		t.Errorf("rounds = %v", got)
	}
	if fmt.Sprint(h.timers) != "[30m0s]" {
		t.Errorf("timers = %v, want only the stability window", h.timers)
	}
}

func TestGoneOnFirstRunCompletes(t *testing.T) {
	h := newHarness(t)
	h.run = func(string, int64) (Summary, error) {
		return Summary{ExecutionStatus: "success", Gone: true, ResourcesSkipped: true, SkipReason: "resource not found"}, nil
	}
	h.exec(Input{Ref: Ref{Kind: "NodePool", ID: "np1", ParentID: "c1"}, Generation: 2, Adapters: []string{"nodepool-config"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if v := h.view(); v.Adapters["nodepool-config"].Outcome != OutcomeGone {
		t.Errorf("adapter outcome = %+v, want gone", v.Adapters["nodepool-config"])
	}
}

func TestSkippedPreconditionsShowInTheView(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.run = func(string, int64) (Summary, error) {
		return Summary{ExecutionStatus: "success", ResourcesSkipped: true, SkipReason: "landingZoneReady not met"}, nil
	}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"nodepool-config"}})
	if v := h.view(); v.Adapters["nodepool-config"].Outcome != OutcomeSkipped || v.Adapters["nodepool-config"].Detail != "landingZoneReady not met" {
		t.Errorf("view = %+v", v.Adapters)
	}
}

func TestAdapterErrorDoesNotStopOtherAdaptersOrTheWorkflow(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1), reconciledAt(1), gone}
	h.run = func(adapter string, _ int64) (Summary, error) {
		if adapter == "broken" {
			return Summary{}, temporal.NewNonRetryableApplicationError("param clusterId: event.id missing", ErrConfig, nil)
		}
		return Summary{ExecutionStatus: "success"}, nil
	}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"broken", "validation"}})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// Non-retryable: one attempt per round, not five.
	if got := h.rounds(2, 2, 2); got[0] != "broken@1,validation@1" {
		t.Errorf("rounds = %q", got)
	}
	if got := h.view().Adapters["broken"]; got.Outcome != OutcomeError || !strings.Contains(got.Detail, "event.id missing") {
		t.Errorf("broken adapter view = %+v", got)
	}
}

func TestRetryableActivityFailureIsRetried(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	attempts := 0
	h.run = func(string, int64) (Summary, error) {
		attempts++
		if attempts < 3 {
			return Summary{}, errors.New("post: PUT status: 503 Service Unavailable")
		}
		return Summary{ExecutionStatus: "success", Reported: true}, nil
	}
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	if v := h.view(); v.Adapters["validation"].Outcome != OutcomeSuccess {
		t.Errorf("view = %+v, want success after retries", v.Adapters)
	}
	if attempts != 4 { // 3 in round one (2 failures), 1 in round two
		t.Errorf("attempts = %d, want 4", attempts)
	}
}

func TestNewlyRegisteredAdapterRunsAtOnce(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), reconciledAt(1), reconciledAt(1), gone}
	h.signalAt(time.Minute, Signal{Generation: 1, Reason: ReasonResync, Adapters: []string{"validation", "landing-zone"}})
	h.signalAt(2*time.Minute, Signal{Generation: 1, Reason: ReasonResync, Adapters: []string{"landing-zone"}})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
	// The added adapter alone; a removal runs no adapter (the resource is
	// only read again); then the self-healing round of what is registered.
	got := h.rounds(1, 1, 1)
	want := []string{"validation@1", "landing-zone@1", "landing-zone@1"}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q, want %q", got, want)
	}
	if h.reads != 4 {
		t.Errorf("read the resource %d times, want 4 (after each change)", h.reads)
	}
}

func TestContinueAsNewCarriesState(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{pendingAt(1, "validation"), pendingAt(1, "validation")}
	h.signalAt(1500*time.Millisecond, Signal{Generation: 2, Reason: "updated"}) // arrives during the 2nd round
	h.delay = time.Second
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"landing-zone", "validation"}, Options: Options{RoundsPerRun: 2}})
	err := h.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	if can.WorkflowType.Name != WorkflowName {
		t.Errorf("continued as %q", can.WorkflowType.Name)
	}
	// Every continue-as-new is a safe point to take a new release.
	if can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Errorf("continued with versioning behaviour %v, want AutoUpgrade", can.InitialVersioningBehavior)
	}
	var next Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Ref != cluster || next.Generation != 2 || !next.LocalRuns || next.Carry == nil || next.Carry.Round != 2 {
		t.Errorf("continued with %+v carry %+v, want the generation-2 signal and 2 rounds carried", next, next.Carry)
	}
	if !next.Carry.All || fmt.Sprint(next.Carry.Settled) != "[validation]" || next.Carry.SettledAt != 1 {
		t.Errorf("carry = %+v, want a round of every adapter pending and the last read-back", next.Carry)
	}
	if next.Options.RoundsPerRun != 2 || next.Options.StabilityWindow != 30*time.Minute {
		t.Errorf("options not carried: %+v", next.Options)
	}
	if v := next.Carry.States["validation"].Last; v == nil || v.Outcome != OutcomeSuccess {
		t.Errorf("adapter states not carried: %+v", next.Carry.States)
	}
}

// asked lists the adapters a carry says the pending round runs, sorted.
func asked(c *Carry) []string {
	var out []string
	for name, s := range c.adapterStates() {
		if s.Asked {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestContinuedRunResumesWhereItWas(t *testing.T) {
	t.Run("a pending round of one adapter", func(t *testing.T) {
		h := newHarness(t)
		h.states = []ResourceState{reconciledAt(2), gone}
		h.exec(Input{Ref: cluster, Generation: 2, Adapters: threeAdapters,
			Carry: &Carry{Round: 200, Failures: 3, Pending: []string{"validation-job"}, Adapters: map[string]AdapterView{"validation": {Generation: 1, Outcome: OutcomeSuccess}}}})
		if got := h.rounds(1, 3); got[0] != "validation-job@2" {
			t.Errorf("first round after continue-as-new = %q, want the pending adapter only", got[0])
		}
		if v := h.view(); v.Round != 202 || v.Adapters["validation"].Generation != 2 {
			t.Errorf("view = %+v, want round 202 and fresh adapter views", v)
		}
	})
	// The same state, as this release hands it over: one value per
	// adapter.
	t.Run("a pending round of one adapter, one state per adapter", func(t *testing.T) {
		h := newHarness(t)
		h.states = []ResourceState{reconciledAt(2), gone}
		done := AdapterView{Generation: 1, Outcome: OutcomeSuccess}
		h.exec(Input{Ref: cluster, Generation: 2, Adapters: threeAdapters, Carry: &Carry{Round: 200, Failures: 3,
			States: map[string]AdapterState{"validation": {Last: &done, Watched: true}, "validation-job": {Asked: true}}}})
		if got := h.rounds(1, 3); got[0] != "validation-job@2" {
			t.Errorf("first round after continue-as-new = %q, want the pending adapter only", got[0])
		}
		if v := h.view(); v.Round != 202 || v.Adapters["validation"].Generation != 2 {
			t.Errorf("view = %+v, want round 202 and fresh adapter views", v)
		}
	})
	t.Run("nothing pending", func(t *testing.T) {
		h := newHarness(t)
		h.states = []ResourceState{gone}
		h.exec(Input{Ref: cluster, Generation: 2, Adapters: []string{"validation"},
			Carry: &Carry{Round: 7, Reconciled: true, Pending: []string{}}})
		// It waits out the window first, then runs its self-healing round.
		if got := h.rounds(1); got[0] != "validation@2" || fmt.Sprint(h.timers) != "[30m0s]" {
			t.Errorf("rounds = %q, timers = %v", got, h.timers)
		}
	})
}
