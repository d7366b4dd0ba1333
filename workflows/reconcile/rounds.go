package reconcile

import (
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/phase"
)

// A round runs only when something changed, and runs only the adapters
// that change concerns.
//
//   - A new generation runs every adapter.
//   - A round after which more adapters are done than before (progress: one
//     became Available, so another one's precondition may now hold) is
//     followed at once by a round of the adapters not done yet.
//   - A round without progress waits out a backoff (1 s doubling to 60 s),
//     unless a change wakes it first: an object an adapter manages changed
//     status, was modified or deleted (the adapter worker's watch), or a
//     node pool of a deleting cluster went away. When every adapter not
//     done waits only on watched objects, the wait is at least ten first
//     backoffs: the watch, not the timer, is what ends it.
//   - A Reconciled resource waits for the next change, or for the
//     safety-net window (jittered) for a self-healing round of every
//     adapter: WatchedStabilityWindow (10 h) when every adapter's last run
//     said all it applies is watched (the watches repair drift), the
//     StabilityWindow (30 min) otherwise.
//   - A time-based precondition (stableFor, conditionAge, now()) runs its
//     adapter again at the moment its answer changes (RecheckAt), when
//     that comes before the backoff or the window.
//   - Signals that carry no change (a resync; a node pool removed while its
//     cluster is not being deleted; an upgrade notice) run no round.
//   - Between rounds, a run pinned to a worker deployment version that is
//     no longer the current one continues as new onto the current one.
//   - Optional adapters ride along: a round that runs every adapter runs
//     them too, a retry or progress round runs those not done, and a change
//     of their objects runs them. The round does not wait for their runs
//     (startOptional), and whether they are done never counts as progress
//     or holds a retry: the workflow never waits on an optional adapter. A
//     resource with no required adapters is never Reconciled; its workflow
//     waits for the next change or the stability window as if it were.

// run is the workflow's loop: one round, then the wait for the next reason
// to run one.
func (r *reconciler) run(ctx workflow.Context) error {
	for {
		if r.roundsRun >= r.opts.RoundsPerRun || (r.roundsRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			return r.continueAsNew(ctx)
		}
		if upgradeDue(ctx) {
			r.log.Info("a newer worker deployment version is current: continuing as new on it", "generation", r.latest, "round", r.round)
			return r.continueAsNew(ctx)
		}
		r.drainSignals(ctx)
		if r.checkFirst {
			r.checkFirst = false
			gone, err := r.observe(ctx)
			if err != nil || gone {
				return err
			}
		}
		if r.roundDue() {
			gone, err := r.runRound(ctx)
			if err != nil || gone {
				return err
			}
			continue
		}
		r.startAsked(ctx)
		r.sleep(ctx)
	}
}

// roundDue reports whether a round is asked for.
func (r *reconciler) roundDue() bool { return r.all || len(r.pending) > 0 || r.wake }

// upgradeDue reports whether Temporal told this run, in the task under
// way, that its worker deployment's current version is no longer the one
// the run is pinned to. Deterministic: the flag is part of the task's
// started event. Always false on unversioned workers.
func upgradeDue(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetTargetWorkerDeploymentVersionChanged()
}

// runRound runs one round and decides what follows it: the next round's
// adapters when it made progress, nothing otherwise (the loop then waits).
func (r *reconciler) runRound(ctx workflow.Context) (gone bool, err error) {
	adapters, optional := r.takePending()
	cause := r.cause
	if cause == "" {
		cause = CauseGeneration // a new run's first round
	}
	r.target, r.wake, r.cause = r.latest, false, ""
	before := r.settledAtTarget()
	r.round++
	r.roundsRun++
	r.phase, r.nextRound = PhaseRunning, time.Time{}
	if len(optional) > 0 {
		r.log.Info("reconcile round", "generation", r.target, "round", r.round, "cause", string(cause), "adapters", adapters, "optional", optional)
	} else {
		r.log.Info("reconcile round", "generation", r.target, "round", r.round, "cause", string(cause), "adapters", adapters)
	}
	started := workflow.Now(ctx)
	r.startOptional(ctx, optional, r.target)
	r.runAdapters(ctx, adapters)

	gone, err = r.observe(ctx)
	// Metrics are not part of the history; the SDK drops them on replay.
	m := r.metrics(ctx)
	m.WithTags(map[string]string{"cause": string(cause)}).Counter(MetricRounds).Inc(1)
	m.Timer(MetricRoundDuration).Record(workflow.Now(ctx).Sub(started))
	if err != nil || gone {
		return gone, err
	}
	r.drainSignals(ctx)
	if r.roundDue() || r.converged() {
		return false, nil // a newer generation or a change: the next round; or done
	}
	if progressed(before, r.settledAtTarget()) {
		if rest := r.unsettled(); len(rest) > 0 {
			r.failures = 0
			r.because(CauseProgress)
			r.askUnsettled(rest)
			r.log.Info("round made progress: running the adapters not done at once", "generation", r.target, "adapters", rest)
		}
	}
	return false, nil
}

// converged reports whether the resource needs no retry: it is
// Reconciled, or nothing is required of it (it never will be, and only
// optional adapters, which the workflow never waits on, may run for it).
func (r *reconciler) converged() bool { return r.reconciled || len(r.adapters) == 0 }

// takePending returns the required and the optional adapters the round
// runs, each sorted, and clears the requests.
func (r *reconciler) takePending() (required, optional []string) {
	for _, a := range r.adapters {
		if r.all || r.pending[a] {
			required = append(required, a)
		}
	}
	for _, a := range r.optional {
		if r.all || r.optPending[a] {
			optional = append(optional, a)
		}
	}
	r.all = false
	clear(r.pending)
	clear(r.optPending)
	return required, optional
}

// ask requests adapters for the next round: a required one makes a round
// due, an optional one rides along with the next round, or starts on its
// own while the workflow waits (startAsked).
func (r *reconciler) ask(adapters ...string) {
	for _, a := range adapters {
		if slices.Contains(r.optional, a) {
			r.optPending[a] = true
		} else {
			r.pending[a] = true
		}
	}
}

// askUnsettled asks the next round for the given required adapters and,
// riding along, the optional ones not done.
func (r *reconciler) askUnsettled(required []string) {
	r.ask(required...)
	r.ask(r.unsettledOptional()...)
}

// startAsked starts the optional adapters asked for while no round is
// due, so a change of an optional adapter's objects neither runs a round
// nor restarts the backoff of the required ones.
func (r *reconciler) startAsked(ctx workflow.Context) {
	if len(r.optPending) == 0 || r.roundDue() {
		return
	}
	names := sortedKeys(r.optPending)
	clear(r.optPending)
	r.log.Info("running optional adapters between rounds", "generation", r.latest, "optional", names)
	r.startOptional(ctx, names, r.latest)
}

// settledAtTarget is the set of required adapters done at the round's
// generation (other adapters' reports never count as progress).
func (r *reconciler) settledAtTarget() []string {
	if r.settledAt != r.target {
		return nil
	}
	if len(r.optional) == 0 {
		return r.settled
	}
	return slices.DeleteFunc(slices.Clone(r.settled), func(a string) bool { return slices.Contains(r.optional, a) })
}

// progressed reports whether an adapter is done after a round that was not
// before it.
func progressed(before, after []string) bool {
	for _, a := range after {
		if !slices.Contains(before, a) {
			return true
		}
	}
	return false
}

// unsettled lists the registered adapters not done at the newest reading.
func (r *reconciler) unsettled() []string { return r.notDone(r.adapters) }

// unsettledOptional lists the optional adapters not done at the newest
// reading.
func (r *reconciler) unsettledOptional() []string { return r.notDone(r.optional) }

func (r *reconciler) notDone(adapters []string) []string {
	var out []string
	for _, a := range adapters {
		if r.settledAt != r.latest || !slices.Contains(r.settled, a) {
			out = append(out, a)
		}
	}
	return out
}

// sleep waits for the next reason to run a round: a signal that asks for
// one, or the timer: the backoff of a resource not Reconciled (which then
// re-runs the adapters not done), the safety-net window of a Reconciled
// one (which then runs every adapter), or the moment a time-based
// precondition gives another answer (which runs the adapters it belongs
// to), whichever comes first. It also ends when a task tells the run to
// move to a newer worker deployment version.
func (r *reconciler) sleep(ctx workflow.Context) {
	now := workflow.Now(ctx)
	wait, cause := r.safetyNetWait()
	r.phase = PhaseStable
	if r.converged() {
		r.failures = 0
	} else {
		wait, cause = r.backoff(), WaitBackoff
		if r.waitsOnWatches() {
			wait = max(wait, r.opts.watchedBackoff())
		}
		r.failures++
		r.phase = PhaseBackoff
		r.metrics(ctx).Timer(MetricBackoff).Record(wait)
	}
	// A time-based precondition's change comes first when it is sooner;
	// and when every adapter not done waits only on one, the backoff
	// would only re-read an answer that cannot have changed yet.
	if at, ok := r.nextRecheck(); ok && (at.Sub(now) < wait || r.waitsOnTime()) {
		wait, cause = max(at.Sub(now), time.Second), WaitTimePrecondition
	}
	r.nextRound, r.waitCause = now.Add(wait), cause
	r.log.Info("waiting for the next round", "generation", r.target, "phase", r.phase, "wait", wait.String(), "cause", string(cause), "reconciled", r.reconciled)

	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	fired := false
	timer := workflow.NewTimer(timerCtx, wait)
	for !fired && !r.roundDue() {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { fired = true })
		sel.AddReceive(r.signals, func(c workflow.ReceiveChannel, _ bool) {
			var s Signal
			c.Receive(ctx, &s)
			r.applyChange(s)
		})
		sel.Select(ctx)
		r.startAsked(ctx)
		if !fired && upgradeDue(ctx) {
			return // the loop continues as new; the wait resumes there
		}
	}
	if !fired || r.roundDue() {
		return
	}
	if cause == WaitTimePrecondition {
		r.because(CauseTimePrecondition)
		r.ask(r.rechecksDue(workflow.Now(ctx))...)
		return
	}
	rest := r.unsettled()
	if r.converged() {
		r.because(CauseSafetyNet)
		r.all = true
		return
	}
	r.because(CauseRetry)
	if len(rest) == 0 {
		// Every adapter says it is done and the resource is still not
		// Reconciled: run them all again.
		r.all = true
		return
	}
	r.askUnsettled(rest)
}

// safetyNetWait is the wait before the safety-net round of a Reconciled
// resource: the long window when every adapter's last run said all it
// applies is watched, the short one otherwise. Either is moved by up to
// ± StabilityJitter of itself, by an amount fixed for each resource and
// round, so that resources created together spread out instead of coming
// back together every window.
func (r *reconciler) safetyNetWait() (time.Duration, WaitCause) {
	window, cause := r.opts.StabilityWindow, WaitSafetyNetUnwatched
	if r.allWatched() {
		window, cause = r.opts.WatchedStabilityWindow, WaitSafetyNet
	}
	return jittered(window, r.opts.StabilityJitter, r.ref.ID, r.round), cause
}

// allWatched reports whether the last run of every adapter, optional ones
// included, said all it applies is watched. An adapter that has not run
// yet in this workflow's life counts as not watched.
func (r *reconciler) allWatched() bool {
	for _, list := range [][]string{r.adapters, r.optional} {
		for _, a := range list {
			if !r.watched[a] {
				return false
			}
		}
	}
	return true
}

// nextRecheck is the earliest time a time-based precondition of an
// adapter's last run gives another answer.
func (r *reconciler) nextRecheck() (time.Time, bool) {
	var first time.Time
	for _, a := range slices.Concat(r.adapters, r.optional) {
		if at, ok := r.recheck[a]; ok && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// rechecksDue lists the adapters whose recheck time has come, and forgets
// those times: the run they ask for records the next ones.
func (r *reconciler) rechecksDue(now time.Time) []string {
	var due []string
	for _, a := range slices.Concat(r.adapters, r.optional) {
		if at, ok := r.recheck[a]; ok && !at.After(now) {
			due = append(due, a)
			delete(r.recheck, a)
		}
	}
	return due
}

// jittered spreads d over [d·(1−j), d·(1+j)) by a hash of the resource id
// and the round: deterministic, as workflow code must be.
func jittered(d time.Duration, j float64, id string, round int64) time.Duration {
	if j <= 0 {
		return d
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	_, _ = h.Write([]byte(strconv.FormatInt(round, 10)))
	frac := float64(h.Sum64()%1_000_000) / 1_000_000 // [0, 1)
	return d + time.Duration((2*frac-1)*j*float64(d))
}

// because records why the next round runs: the first reason asked for
// since the last round (later ones ride along with it).
func (r *reconciler) because(c RoundCause) {
	if r.cause == "" {
		r.cause = c
	}
}

// applyChange folds a signal into the workflow's state.
func (r *reconciler) applyChange(s Signal) {
	if s.Generation > r.latest {
		r.latest, r.all = s.Generation, true
		r.because(CauseGeneration)
	}
	if s.Options != nil {
		r.opts = s.Options.WithDefaults()
	}
	if s.Adapters != nil {
		next := sortedCopy(s.Adapters)
		if !slices.Equal(next, r.adapters) {
			// A newly registered adapter runs; removing one only changes
			// what Reconciled means, so the resource is read again.
			for _, a := range next {
				if !slices.Contains(r.adapters, a) {
					r.pending[a] = true
				}
			}
			r.adapters, r.wake = next, true
			r.because(CauseOperator)
		}
	}
	if s.Optional != nil {
		// A new optional adapter runs; one removed changes nothing the
		// workflow decides on.
		next := sortedCopy(s.Optional)
		if !slices.Equal(next, r.optional) {
			var added []string
			for _, a := range next {
				if !slices.Contains(r.optional, a) {
					added = append(added, a)
				}
			}
			r.optional = next
			if len(added) > 0 {
				r.because(CauseOperator)
			}
			r.ask(added...)
		}
	}
	switch s.Reason {
	case ReasonRemoved:
		r.checkFirst, r.wake = true, true
		r.because(CauseOperator)
	case ReasonChildRemoved:
		// A deleting cluster waits for its node pools; any other needs
		// nothing from a node pool's removal.
		if r.deleting {
			r.runNotDone(CauseChild)
		}
	case ReasonObjectChanged:
		due := r.changedAdapters(s)
		if len(due) > 0 {
			r.because(CauseWake)
		}
		r.ask(due...)
		r.log.Info("managed objects changed", "adapters", s.Changed, "due", due, "detail", s.Detail)
	case ReasonParentReconciled:
		// The parent is what a waiting child's adapters may wait for; a
		// Reconciled child is left alone (an extra run of an adapter that
		// gates re-runs on how long the resource has been Reconciled
		// would report it unavailable).
		if !r.reconciled {
			r.runNotDone(CauseParent)
		}
	case ReasonUpgrade:
		// Nothing to fold in: the task that delivers it is what the run
		// needed to see the current version (upgradeDue).
	case ReasonResync:
		// Its adapters and options, folded in above, are all it carries.
	}
}

// runNotDone asks a round at once, for the adapters not done: what a
// resource waiting on something else needs when that something changes.
func (r *reconciler) runNotDone(c RoundCause) {
	r.because(c)
	r.askUnsettled(r.unsettled())
	r.wake = true
}

// changedAdapters picks the registered and optional adapters a change
// notice asks to run: those with an object in a state their last run did
// not see (a burst of updates often ends in the state a round already
// read), or, for a notice without object states, every adapter it names.
func (r *reconciler) changedAdapters(s Signal) []string {
	due := map[string]bool{}
	if len(s.Objects) == 0 {
		for _, a := range s.Changed {
			due[a] = true
		}
	}
	for _, o := range s.Objects {
		if o.Digest == "" || r.seen[o.Adapter][o.Object] != o.Digest {
			due[o.Adapter] = true
		}
	}
	var out []string
	for _, a := range r.adapters {
		if due[a] {
			out = append(out, a)
		}
	}
	for _, a := range r.optional {
		if due[a] {
			out = append(out, a)
		}
	}
	return out
}

// observe reads the resource back (a local activity on the reconciler's
// worker: no task queue round trip, and no activity in the history) and
// folds what the API says into the workflow's view. gone is true when the
// resource no longer exists: the workflow's job is done.
func (r *reconciler) observe(ctx workflow.Context) (gone bool, err error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 10 * time.Minute,
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy:            readRetry,
	})
	var state ResourceState
	if err := workflow.ExecuteLocalActivity(lctx, ActivityReadResource, r.ref).Get(ctx, &state); err != nil {
		return false, err
	}
	if state.Gone {
		r.phase = PhaseFinished
		r.log.Info("resource removed: reconcile finished", "round", r.round)
		return true, nil
	}
	if state.Generation > r.latest {
		r.latest, r.all = state.Generation, true // a bump whose signal has not arrived yet
		r.because(CauseGeneration)
	}
	r.reconciled = state.Reconciled
	r.deleting = state.Deleting
	r.reason = state.Reason
	r.settled, r.settledAt = state.Settled, state.Generation
	r.upsertAttributes(ctx)
	return false, nil
}

// runAdapters runs the adapters, in parallel, one activity each.
func (r *reconciler) runAdapters(ctx workflow.Context, adapters []string) {
	wg := workflow.NewWaitGroup(ctx)
	for _, name := range adapters {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			r.record(ctx, name, r.target, r.runAdapter(ctx, name, r.target))
		})
	}
	wg.Wait(ctx)
}

// startOptional starts each optional adapter's run at generation gen
// without waiting for it: a slow, failing or unhosted optional adapter
// (whose activity waits up to five minutes for a worker) must not hold the
// round's read-back or the next round. One run per adapter at a time:
// asked for again while it runs, it runs once more afterwards, at the
// newest generation.
func (r *reconciler) startOptional(ctx workflow.Context, adapters []string, gen int64) {
	for _, name := range adapters {
		if r.inflight[name] {
			r.again[name] = true
			continue
		}
		r.inflight[name] = true
		// Each run has its own generation: a run asked for again moves
		// its own on, not its siblings'.
		gen := gen
		workflow.Go(ctx, func(ctx workflow.Context) {
			for {
				run := r.runAdapter(ctx, name, gen)
				r.record(ctx, name, gen, run)
				again := r.again[name] && slices.Contains(r.optional, name)
				delete(r.again, name)
				if !again {
					break
				}
				gen = r.latest
			}
			delete(r.inflight, name)
		})
	}
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
	r.watched[name] = run.watched
	if run.recheckAt.IsZero() {
		delete(r.recheck, name)
	} else {
		r.recheck[name] = run.recheckAt
	}
	if run.seen == nil {
		delete(r.seen, name)
	} else {
		r.seen[name] = run.seen
	}
	r.outcomes[name] = AdapterView{Generation: gen, Outcome: run.outcome, Detail: run.detail, FinishedAt: workflow.Now(ctx)}
	if run.outcome == OutcomeError || run.outcome == OutcomeFailed {
		if slices.Contains(r.optional, name) {
			r.log.Warn("optional adapter did not succeed; the resource does not wait for it", "adapter", name, "generation", gen, "outcome", run.outcome, "detail", run.detail)
		} else {
			r.log.Warn("adapter did not succeed", "adapter", name, "generation", gen, "outcome", run.outcome, "detail", run.detail)
		}
	}
}

// runAdapter runs every phase of one adapter in one activity. A run already
// under way when a newer generation arrives finishes (it read the resource
// as the API had it when it started); the coalesced round follows at once.
func (r *reconciler) runAdapter(ctx workflow.Context, name string, gen int64) adapterRun {
	var res RunResult
	if err := workflow.ExecuteActivity(r.adapterContext(ctx, name, 10*time.Minute), ActivityRun,
		RunInput{Event: r.ref.Event(gen)}).Get(ctx, &res); err != nil {
		return adapterRun{outcome: OutcomeError, detail: activityError("run", err)}
	}
	out := adapterRun{seen: res.Seen, watched: res.Watched, recheckAt: res.RecheckAt}
	out.outcome, out.detail = outcomeOf(res.Summary)
	if out.seen == nil {
		out.seen = map[string]string{}
	}
	return out
}

// metrics is the workflow's metrics handler, tagged with the resource kind.
func (r *reconciler) metrics(ctx workflow.Context) client.MetricsHandler {
	return workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"kind": r.ref.Kind})
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
	for _, a := range rest {
		v, ok := r.outcomes[a]
		if !ok || v.Generation != r.target || v.Outcome != OutcomeSuccess || !r.watched[a] || len(r.seen[a]) == 0 {
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
	for _, a := range rest {
		v, ok := r.outcomes[a]
		if _, timed := r.recheck[a]; !ok || !timed || v.Generation != r.target || v.Outcome != OutcomeSkipped {
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
