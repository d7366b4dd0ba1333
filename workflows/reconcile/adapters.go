package reconcile

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/phase"
)

// adapterTable holds the adapters a workflow runs, required and optional,
// and one state per adapter.
type adapterTable struct {
	required []string // sorted
	optional []string // sorted
	// state is every adapter's, including ones no longer registered
	// (their last outcome stays in the state query).
	state map[string]*adapterState
}

// adapterState is everything the workflow knows of one adapter.
type adapterState struct {
	// last is its last run's outcome; ran says there was one.
	last AdapterView
	ran  bool
	// seen is the digest of each object its last run discovered: a change
	// notice for a state already seen runs nothing. nil when the last run
	// failed (or none ran).
	seen map[string]string
	// watched says its worker watches every object its last run applied
	// (RunResult.Watched): it picks the safety-net window and the backoff
	// of a round waiting on watched objects.
	watched bool
	// recheckAt is when a time-based precondition of its last run gives
	// another answer (RunResult.RecheckAt); zero when none.
	recheckAt time.Time
	// asked says the next round runs it; an optional adapter asked while
	// no round is due starts on its own (startAsked).
	asked bool
	// running and again are an optional adapter's: a run under way, and
	// a request that came while it was (it runs once more afterwards, at
	// the newest generation).
	running, again bool
	// remote says its local run answered that the worker running this
	// workflow does not host it: for the rest of this run it goes to its
	// own task queue directly.
	remote bool
	// started is when its run under way started; zero when none is.
	started time.Time
}

func newAdapterTable(required, optional []string) adapterTable {
	return adapterTable{required: sortedCopy(required), optional: sortedCopy(optional), state: map[string]*adapterState{}}
}

// get is an adapter's state, made on first use.
func (t *adapterTable) get(name string) *adapterState {
	s, ok := t.state[name]
	if !ok {
		s = &adapterState{}
		t.state[name] = s
	}
	return s
}

func (t *adapterTable) isOptional(name string) bool { return slices.Contains(t.optional, name) }

// all lists the required adapters, then the optional ones.
func (t *adapterTable) all() []string { return slices.Concat(t.required, t.optional) }

// asked lists the adapters of names asked for (every one with all).
func (t *adapterTable) asked(names []string, all bool) []string {
	var out []string
	for _, name := range names {
		if all || t.get(name).asked {
			out = append(out, name)
		}
	}
	return out
}

// anyAsked reports whether a required adapter is asked for: a round is due.
func (t *adapterTable) anyAsked() bool { return len(t.asked(t.required, false)) > 0 }

// ask requests adapters for the next round: a required one makes a round
// due, an optional one rides along with the next round, or starts on its
// own while the workflow waits (startAsked).
func (t *adapterTable) ask(names ...string) {
	for _, name := range names {
		t.get(name).asked = true
	}
}

// take returns the required and the optional adapters the round runs,
// and clears every request.
func (t *adapterTable) take(all bool) (required, optional []string) {
	required, optional = t.asked(t.required, all), t.asked(t.optional, all)
	for _, s := range t.state {
		s.asked = false
	}
	return required, optional
}

// running lists the adapters whose run is under way, and when each
// started.
func (t *adapterTable) running() ([]string, map[string]time.Time) {
	var names []string
	at := map[string]time.Time{}
	for _, name := range t.all() {
		if s := t.get(name); !s.started.IsZero() {
			names = append(names, name)
			at[name] = s.started
		}
	}
	return names, at
}

// allWatched reports whether the last run of every adapter, optional ones
// included, said all it applies is watched. An adapter that has not run
// yet in this workflow's life counts as not watched.
func (t *adapterTable) allWatched() bool {
	for _, name := range t.all() {
		if !t.get(name).watched {
			return false
		}
	}
	return true
}

// nextRecheck is the earliest time a time-based precondition of an
// adapter's last run gives another answer.
func (t *adapterTable) nextRecheck() (time.Time, bool) {
	var first time.Time
	for _, name := range t.all() {
		if at := t.get(name).recheckAt; !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// rechecksDue lists the adapters whose recheck time has come, and forgets
// those times: the run they ask for records the next ones.
func (t *adapterTable) rechecksDue(now time.Time) []string {
	var due []string
	for _, name := range t.all() {
		s := t.get(name)
		if !s.recheckAt.IsZero() && !s.recheckAt.After(now) {
			due = append(due, name)
			s.recheckAt = time.Time{}
		}
	}
	return due
}

// changed picks the registered and optional adapters a change notice asks
// to run: those with an object in a state their last run did not see (a
// burst of updates often ends in the state a round already read), or, for
// a notice without object states, every adapter it names.
func (t *adapterTable) changed(s Signal) []string {
	due := map[string]bool{}
	if len(s.Objects) == 0 {
		for _, a := range s.Changed {
			due[a] = true
		}
	}
	for _, o := range s.Objects {
		if o.Digest == "" || t.get(o.Adapter).seen[o.Object] != o.Digest {
			due[o.Adapter] = true
		}
	}
	var out []string
	for _, name := range t.all() {
		if due[name] {
			out = append(out, name)
		}
	}
	return out
}

// snapshot is every adapter's state as continue-as-new hands it over. A
// run under way ends with this run (its result would reach no one): the
// next run starts it again.
func (t *adapterTable) snapshot() map[string]AdapterState {
	out := map[string]AdapterState{}
	for name, s := range t.state {
		snap := AdapterState{Seen: s.seen, Watched: s.watched, RecheckAt: s.recheckAt, Asked: s.asked || s.running}
		if s.ran {
			view := s.last
			snap.Last = &view
		}
		if snap.Last != nil || snap.Seen != nil || snap.Watched || !snap.RecheckAt.IsZero() || snap.Asked {
			out[name] = snap
		}
	}
	return out
}

// restore takes over a previous run's snapshot.
func (s *adapterState) restore(snap AdapterState) {
	if snap.Last != nil {
		s.last, s.ran = *snap.Last, true
	}
	s.seen, s.watched, s.recheckAt, s.asked = snap.Seen, snap.Watched, snap.RecheckAt, snap.Asked
}

// adapterRun is how one adapter's run ended.
type adapterRun struct {
	outcome Outcome
	detail  string
	// seen, watched and recheckAt are RunResult's; seen is nil when the
	// run failed.
	seen      map[string]string
	watched   bool
	recheckAt time.Time
}

// record keeps an adapter run's outcome for the state query, the backoff
// and change notices.
func (r *reconciler) record(ctx workflow.Context, name string, gen int64, run adapterRun) {
	s := r.adapters.get(name)
	s.watched, s.recheckAt, s.seen = run.watched, run.recheckAt, run.seen
	s.last, s.ran = AdapterView{Generation: gen, Outcome: run.outcome, Detail: run.detail, FinishedAt: workflow.Now(ctx), StartedAt: s.started}, true
	s.started = time.Time{}
	if run.outcome == OutcomeError || run.outcome == OutcomeFailed {
		if r.adapters.isOptional(name) {
			r.run.log.Warn("optional adapter did not succeed; the resource does not wait for it", "adapter", name, "generation", gen, "outcome", run.outcome, "detail", run.detail)
		} else {
			r.run.log.Warn("adapter did not succeed", "adapter", name, "generation", gen, "outcome", run.outcome, "detail", run.detail)
		}
	}
}

// runAdapters runs the required adapters, in parallel, one run each.
func (r *reconciler) runAdapters(ctx workflow.Context, names []string) {
	wg := workflow.NewWaitGroup(ctx)
	for _, name := range names {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			r.record(ctx, name, r.round.target, r.runAdapter(ctx, name, r.round.target, r.run.local))
		})
	}
	wg.Wait(ctx)
}

// startOptional starts each optional adapter's run at generation gen
// without waiting for it: a slow, failing or unhosted optional adapter
// (whose activity waits up to five minutes for a worker) must not hold the
// round's read-back or the next round. One run per adapter at a time:
// asked for again while it runs, it runs once more afterwards, at the
// newest generation. Optional adapters always run on their own task
// queues: a local run would hold the workflow task open for as long as
// the run takes, and with it the round.
func (r *reconciler) startOptional(ctx workflow.Context, names []string, gen int64) {
	for _, name := range names {
		s := r.adapters.get(name)
		if s.running {
			s.again = true
			continue
		}
		s.running = true
		// Each run has its own generation: a run asked for again moves
		// its own on, not its siblings'.
		gen := gen
		workflow.Go(ctx, func(ctx workflow.Context) {
			for {
				r.record(ctx, name, gen, r.runAdapter(ctx, name, gen, false))
				again := s.again && r.adapters.isOptional(name)
				s.again = false
				if !again {
					break
				}
				gen = r.round.latest
			}
			s.running = false
		})
	}
}

// runAdapter runs every phase of one adapter in one activity: a local
// activity when local is set and the reconciler's worker hosts the
// adapter, on the adapter's own task queue otherwise. A run already under
// way when a newer generation arrives finishes (it read the resource as
// the API had it when it started); the coalesced round follows at once.
func (r *reconciler) runAdapter(ctx workflow.Context, name string, gen int64, local bool) adapterRun {
	in := RunInput{Event: r.run.ref.Event(gen), Adapter: name}
	var res RunResult
	s := r.adapters.get(name)
	s.started = workflow.Now(ctx)
	if local && !s.remote {
		err := workflow.ExecuteLocalActivity(r.localContext(ctx), ActivityRun, in).Get(ctx, &res)
		if err != nil {
			return adapterRun{outcome: OutcomeError, detail: activityError("run", err)}
		}
		if !res.NotHosted {
			return runOf(res)
		}
		s.remote = true
		r.run.log.Info("adapter not hosted beside the reconciler: running it on its own task queue", "adapter", name, "generation", gen)
	}
	if err := workflow.ExecuteActivity(r.adapterContext(ctx, name), ActivityRun, in).Get(ctx, &res); err != nil {
		return adapterRun{outcome: OutcomeError, detail: activityError("run", err)}
	}
	return runOf(res)
}

// runOf reads an adapter run's result.
func runOf(res RunResult) adapterRun {
	out := adapterRun{seen: res.Seen, watched: res.Watched, recheckAt: res.RecheckAt}
	out.outcome, out.detail = outcomeOf(res.Summary)
	if out.seen == nil {
		out.seen = map[string]string{}
	}
	return out
}

// adapterRetry is the retry policy of an adapter's run, local or not.
var adapterRetry = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        30 * time.Second,
	MaximumAttempts:        5,
	NonRetryableErrorTypes: []string{ErrConfig, ErrRejected},
}

// runTimeout bounds one attempt of an adapter's run.
const runTimeout = 10 * time.Minute

// adapterContext routes an adapter activity to the adapter's own task
// queue. A queue no worker polls fails after ScheduleToStart instead of
// holding the round.
func (r *reconciler) adapterContext(ctx workflow.Context, adapter string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              AdapterTaskQueue(adapter),
		ScheduleToStartTimeout: 5 * time.Minute,
		StartToCloseTimeout:    runTimeout,
		HeartbeatTimeout:       r.run.opts.HeartbeatTimeout,
		RetryPolicy:            adapterRetry,
	})
}

// localContext runs an adapter as a local activity of the reconciler's
// worker: no task queue, no dispatch through matching, and the run's
// result recorded in the history as a marker of the workflow task.
func (r *reconciler) localContext(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: runTimeout,
		RetryPolicy:         adapterRetry,
	})
}

func activityError(phase string, err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return phase + ": " + app.Error()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return phase + ": " + to.Error() + " (is a worker hosting this adapter running?)"
	}
	return phase + ": " + err.Error()
}

// waitsOnWatches reports whether every adapter not done ran successfully at
// the round's generation and waits only on objects its worker watches (an
// applied Job not complete yet, a Deployment rolling out): their change of
// readiness wakes the workflow, so the backoff is only the safety net for
// a change no watch reported. An adapter whose precondition was not met,
// that failed, or that applied nothing is retried on the usual backoff.
func (r *reconciler) waitsOnWatches() bool {
	rest := r.unsettled()
	if len(rest) == 0 {
		return false
	}
	for _, name := range rest {
		s := r.adapters.get(name)
		if !s.ran || s.last.Generation != r.round.target || s.last.Outcome != OutcomeSuccess || !s.watched || len(s.seen) == 0 {
			return false
		}
	}
	return true
}

// waitsOnTime reports whether every adapter not done skipped its resources
// at the round's generation on a precondition that says when its answer
// changes (RunResult.RecheckAt): nothing but time, or a change that wakes
// the workflow anyway, can make them run differently before then.
func (r *reconciler) waitsOnTime() bool {
	if r.converged() {
		return false
	}
	rest := r.unsettled()
	for _, name := range rest {
		s := r.adapters.get(name)
		if !s.ran || s.recheckAt.IsZero() || s.last.Generation != r.round.target || s.last.Outcome != OutcomeSkipped {
			return false
		}
	}
	return len(rest) > 0
}

// outcomeOf reads an adapter run's outcome from its summary.
func outcomeOf(s Summary) (outcome Outcome, detail string) {
	switch {
	case s.Gone:
		return OutcomeGone, s.SkipReason
	case s.ExecutionStatus == phase.ExecutionFailed:
		return OutcomeFailed, string(s.ErrorPhase) + ": " + s.Error
	case s.ResourcesSkipped:
		return OutcomeSkipped, s.SkipReason
	}
	return OutcomeSuccess, ""
}
