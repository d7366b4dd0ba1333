package reconcile

import (
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
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

// loop is the workflow's loop: one round, then the wait for the next
// reason to run one.
func (r *reconciler) loop(ctx workflow.Context) error {
	for {
		if r.round.inRun >= r.run.opts.RoundsPerRun || (r.round.inRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			return r.continueAsNew(ctx)
		}
		if upgradeDue(ctx) {
			r.run.log.Info("a newer worker deployment version is current: continuing as new on it", "generation", r.round.latest, "round", r.round.number)
			return r.continueAsNew(ctx)
		}
		r.drainSignals()
		if r.round.checkFirst {
			r.round.checkFirst = false
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
func (r *reconciler) roundDue() bool { return r.round.all || r.round.wake || r.adapters.anyAsked() }

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
	required, optional := r.adapters.take(r.round.all)
	cause := r.round.cause
	if cause == "" {
		cause = CauseGeneration // a new run's first round
	}
	rs := &r.round
	rs.target, rs.wake, rs.cause, rs.all, rs.ran = rs.latest, false, "", false, cause
	before := r.settledAtTarget()
	rs.number++
	rs.inRun++
	rs.phase, rs.nextRound = PhaseRunning, time.Time{}
	if len(optional) > 0 {
		r.run.log.Info("reconcile round", "generation", rs.target, "round", rs.number, "cause", string(cause), "adapters", required, "optional", optional)
	} else {
		r.run.log.Info("reconcile round", "generation", rs.target, "round", rs.number, "cause", string(cause), "adapters", required)
	}
	started := workflow.Now(ctx)
	r.startOptional(ctx, optional, rs.target)
	r.runAdapters(ctx, required)

	gone, err = r.observe(ctx)
	// Metrics are not part of the history; the SDK drops them on replay.
	m := r.metrics(ctx)
	m.WithTags(map[string]string{"cause": string(cause)}).Counter(MetricRounds).Inc(1)
	m.Timer(MetricRoundDuration).Record(workflow.Now(ctx).Sub(started))
	if err != nil || gone {
		return gone, err
	}
	r.drainSignals()
	if r.roundDue() || r.converged() {
		return false, nil // a newer generation or a change: the next round; or done
	}
	if progressed(before, r.settledAtTarget()) {
		if rest := r.unsettled(); len(rest) > 0 {
			rs.failures = 0
			r.because(CauseProgress)
			r.askUnsettled(rest)
			r.run.log.Info("round made progress: running the adapters not done at once", "generation", rs.target, "adapters", rest)
		}
	}
	return false, nil
}

// converged reports whether the resource needs no retry: it is
// Reconciled, or nothing is required of it (it never will be, and only
// optional adapters, which the workflow never waits on, may run for it).
func (r *reconciler) converged() bool { return r.last.reconciled || len(r.adapters.required) == 0 }

// askUnsettled asks the next round for the given required adapters and,
// riding along, the optional ones not done.
func (r *reconciler) askUnsettled(required []string) {
	r.adapters.ask(required...)
	r.adapters.ask(r.notDone(r.adapters.optional)...)
}

// startAsked starts the optional adapters asked for while no round is
// due, so a change of an optional adapter's objects neither runs a round
// nor restarts the backoff of the required ones.
func (r *reconciler) startAsked(ctx workflow.Context) {
	if r.roundDue() {
		return
	}
	_, names := r.adapters.take(false)
	if len(names) == 0 {
		return
	}
	r.run.log.Info("running optional adapters between rounds", "generation", r.round.latest, "optional", names)
	r.startOptional(ctx, names, r.round.latest)
}

// settledAtTarget is the set of required adapters done at the round's
// generation (other adapters' reports never count as progress).
func (r *reconciler) settledAtTarget() []string {
	if r.last.settledAt != r.round.target {
		return nil
	}
	if len(r.adapters.optional) == 0 {
		return r.last.settled
	}
	return slices.DeleteFunc(slices.Clone(r.last.settled), r.adapters.isOptional)
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
func (r *reconciler) unsettled() []string { return r.notDone(r.adapters.required) }

func (r *reconciler) notDone(adapters []string) []string {
	var out []string
	for _, a := range adapters {
		if r.last.settledAt != r.round.latest || !slices.Contains(r.last.settled, a) {
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
	wait, cause := r.nextWait(ctx)
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	fired := false
	timer := workflow.NewTimer(timerCtx, wait)
	for !fired && !r.roundDue() {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { fired = true })
		sel.AddReceive(r.run.signals, func(c workflow.ReceiveChannel, _ bool) {
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
	r.timerFired(ctx, cause)
}

// nextWait decides how long the workflow waits for the next round, and
// why, and records it for the state query and the log.
func (r *reconciler) nextWait(ctx workflow.Context) (time.Duration, WaitCause) {
	now := workflow.Now(ctx)
	wait, cause := r.safetyNetWait()
	rs := &r.round
	rs.phase = PhaseStable
	if r.converged() {
		rs.failures = 0
	} else {
		wait, cause = r.backoff(), WaitBackoff
		if r.waitsOnWatches() {
			wait = max(wait, r.run.opts.watchedBackoff())
		}
		rs.failures++
		rs.phase = PhaseBackoff
		r.metrics(ctx).Timer(MetricBackoff).Record(wait)
	}
	// A time-based precondition's change comes first when it is sooner;
	// and when every adapter not done waits only on one, the backoff
	// would only re-read an answer that cannot have changed yet.
	if at, ok := r.adapters.nextRecheck(); ok && (at.Sub(now) < wait || r.waitsOnTime()) {
		wait, cause = max(at.Sub(now), time.Second), WaitTimePrecondition
	}
	rs.nextRound, rs.waitCause = now.Add(wait), cause
	r.run.log.Info("waiting for the next round", "generation", rs.target, "phase", rs.phase, "wait", wait.String(), "cause", string(cause), "reconciled", r.last.reconciled)
	return wait, cause
}

// timerFired asks for the round the wait's timer stands for.
func (r *reconciler) timerFired(ctx workflow.Context, cause WaitCause) {
	if cause == WaitTimePrecondition {
		r.because(CauseTimePrecondition)
		r.adapters.ask(r.adapters.rechecksDue(workflow.Now(ctx))...)
		return
	}
	rest := r.unsettled()
	if r.converged() {
		r.because(CauseSafetyNet)
		r.round.all = true
		return
	}
	r.because(CauseRetry)
	if len(rest) == 0 {
		// Every adapter says it is done and the resource is still not
		// Reconciled: run them all again.
		r.round.all = true
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
	o := r.run.opts
	window, cause := o.StabilityWindow, WaitSafetyNetUnwatched
	if r.adapters.allWatched() {
		window, cause = o.WatchedStabilityWindow, WaitSafetyNet
	}
	return jittered(window, o.StabilityJitter, r.run.ref.ID, r.round.number), cause
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
	if r.round.cause == "" {
		r.round.cause = c
	}
}

// applyChange folds a signal into the workflow's state.
func (r *reconciler) applyChange(s Signal) {
	if s.Generation > r.round.latest {
		r.round.latest, r.round.all = s.Generation, true
		r.because(CauseGeneration)
	}
	if s.Options != nil {
		r.run.opts = s.Options.WithDefaults()
	}
	if s.Adapters != nil {
		r.setRequired(s.Adapters)
	}
	if s.Optional != nil {
		r.setOptional(s.Optional)
	}
	switch s.Reason {
	case ReasonRemoved:
		r.round.checkFirst, r.round.wake = true, true
		r.because(CauseOperator)
	case ReasonChildRemoved:
		// A deleting cluster waits for its node pools; any other needs
		// nothing from a node pool's removal.
		if r.last.deleting {
			r.runNotDone(CauseChild)
		}
	case ReasonObjectChanged:
		due := r.adapters.changed(s)
		if len(due) > 0 {
			r.because(CauseWake)
		}
		r.adapters.ask(due...)
		r.run.log.Info("managed objects changed", "adapters", s.Changed, "due", due, "detail", s.Detail)
	case ReasonParentReconciled:
		// The parent is what a waiting child's adapters may wait for; a
		// Reconciled child is left alone (an extra run of an adapter that
		// gates re-runs on how long the resource has been Reconciled
		// would report it unavailable).
		if !r.last.reconciled {
			r.runNotDone(CauseParent)
		}
	case ReasonUpgrade:
		// Nothing to fold in: the task that delivers it is what the run
		// needed to see the current version (upgradeDue).
	case ReasonResync:
		// Its adapters and options, folded in above, are all it carries.
	}
}

// setRequired replaces the required adapters. A newly registered adapter
// runs; removing one only changes what Reconciled means, so the resource
// is read again.
func (r *reconciler) setRequired(names []string) {
	next := sortedCopy(names)
	if slices.Equal(next, r.adapters.required) {
		return
	}
	for _, a := range next {
		if !slices.Contains(r.adapters.required, a) {
			r.adapters.ask(a)
		}
	}
	r.adapters.required, r.round.wake = next, true
	r.because(CauseOperator)
}

// setOptional replaces the optional adapters. A new optional adapter
// runs; one removed changes nothing the workflow decides on.
func (r *reconciler) setOptional(names []string) {
	next := sortedCopy(names)
	if slices.Equal(next, r.adapters.optional) {
		return
	}
	var added []string
	for _, a := range next {
		if !r.adapters.isOptional(a) {
			added = append(added, a)
		}
	}
	r.adapters.optional = next
	if len(added) > 0 {
		r.because(CauseOperator)
	}
	r.adapters.ask(added...)
}

// runNotDone asks a round at once, for the adapters not done: what a
// resource waiting on something else needs when that something changes.
func (r *reconciler) runNotDone(c RoundCause) {
	r.because(c)
	r.askUnsettled(r.unsettled())
	r.round.wake = true
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
	if err := workflow.ExecuteLocalActivity(lctx, ActivityReadResource, r.run.ref).Get(ctx, &state); err != nil {
		return false, err
	}
	if state.Gone {
		r.round.phase = PhaseFinished
		r.run.log.Info("resource removed: reconcile finished", "round", r.round.number)
		return true, nil
	}
	if state.Generation > r.round.latest {
		r.round.latest, r.round.all = state.Generation, true // a bump whose signal has not arrived yet
		r.because(CauseGeneration)
	}
	r.last = readBack{reconciled: state.Reconciled, deleting: state.Deleting, reason: state.Reason,
		settled: state.Settled, settledAt: state.Generation}
	r.upsertAttributes(ctx)
	return false, nil
}

// readRetry is the retry policy of the read-back: until the API answers.
var readRetry = &temporal.RetryPolicy{
	InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
	NonRetryableErrorTypes: []string{ErrConfig},
}

// metrics is the workflow's metrics handler, tagged with the resource kind.
func (r *reconciler) metrics(ctx workflow.Context) client.MetricsHandler {
	return workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"kind": r.run.ref.Kind})
}
