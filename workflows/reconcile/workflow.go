package reconcile

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Workflow reconciles one resource until it is gone.
func Workflow(ctx workflow.Context, in Input) error {
	r := &reconciler{}
	if err := r.setup(ctx, in); err != nil {
		return err
	}
	return r.run(ctx)
}

// reconciler is the workflow's state. Everything here is deterministic:
// time comes from workflow.Now, adapters are iterated in sorted order.
type reconciler struct {
	ref      Ref
	opts     Options
	adapters []string
	signals  workflow.ReceiveChannel
	log      log.Logger

	latest     int64 // newest generation known
	target     int64 // generation of the current round
	round      int64 // rounds over the workflow's whole life
	roundsRun  int   // rounds in this run, for continue-as-new
	failures   int   // rounds since last Reconciled, for the backoff
	reconciled bool
	reason     string
	phase      string
	nextRound  time.Time
	outcomes   map[string]AdapterView

	// settled are the adapters whose stored report already says they are
	// done (Available, or Finalized while deleting) at generation settledAt,
	// as read back after the last round.
	settled   []string
	settledAt int64
	// retry is set when a backoff timer ends the wait: the next round only
	// re-runs the adapters that are not settled yet.
	retry bool

	// wake asks for a round now although no newer generation is known.
	wake bool
	// checkFirst asks to read the resource before running adapters: the
	// API said it was removed.
	checkFirst bool
	// attrs are the search attribute values last written, so unchanged
	// values do not add history events.
	attrs *attrValues
}

type attrValues struct {
	generation int64
	reconciled bool
}

func (r *reconciler) setup(ctx workflow.Context, in Input) error {
	if in.Ref.ID == "" || in.Ref.Kind == "" {
		return temporal.NewNonRetryableApplicationError("the workflow input names no resource", ErrConfig, nil)
	}
	r.ref, r.opts, r.latest = in.Ref, in.Options.WithDefaults(), in.Generation
	r.adapters = sortedCopy(in.Adapters)
	r.outcomes = map[string]AdapterView{}
	r.phase = PhaseRunning
	if c := in.Carry; c != nil {
		r.round, r.failures, r.reconciled = c.Round, c.Failures, c.Reconciled
		r.wake, r.checkFirst = c.Wake, c.CheckFirst
		for k, v := range c.Adapters {
			r.outcomes[k] = v
		}
	}
	r.signals = workflow.GetSignalChannel(ctx, SignalName)
	r.log = log.With(workflow.GetLogger(ctx), "kind", r.ref.Kind, "resource_id", r.ref.ID)
	return workflow.SetQueryHandler(ctx, QueryName, r.view)
}

func (r *reconciler) view() (View, error) {
	out := View{Ref: r.ref, Generation: r.latest, Target: r.target, Round: r.round, Phase: r.phase,
		Reconciled: r.reconciled, Reason: r.reason, NextRound: r.nextRound, Adapters: map[string]AdapterView{}}
	for k, v := range r.outcomes {
		out.Adapters[k] = v
	}
	return out, nil
}

func (r *reconciler) run(ctx workflow.Context) error {
	for {
		if r.roundsRun >= r.opts.RoundsPerRun || (r.roundsRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
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

		adapters := r.roundAdapters()
		r.target, r.wake, r.retry = r.latest, false, false
		r.round++
		r.roundsRun++
		r.phase, r.nextRound = PhaseRunning, time.Time{}
		r.upsertAttributes(ctx)
		r.log.Info("reconcile round", "generation", r.target, "round", r.round, "adapters", adapters)
		r.runAdapters(ctx, adapters)

		gone, err := r.observe(ctx)
		if err != nil || gone {
			return err
		}
		r.drainSignals(ctx)
		if r.latest > r.target || r.wake {
			continue // bumps during the round coalesce into this next one
		}
		wait := r.opts.StabilityWindow
		r.phase = PhaseStable
		if r.reconciled {
			r.failures = 0
		} else {
			wait = r.backoff()
			r.failures++
			r.phase = PhaseBackoff
		}
		r.nextRound = workflow.Now(ctx).Add(wait)
		r.log.Info("waiting for the next round", "generation", r.target, "phase", r.phase, "wait", wait.String(), "reconciled", r.reconciled)
		fired := r.wait(ctx, wait)
		r.retry = fired && !r.reconciled
	}
}

// roundAdapters picks who runs this round. A retry after a backoff re-runs
// only the adapters that have not settled at this generation: the others
// already reported success, and re-running them would only repeat it. Any
// other round (a new generation, a wake, the stability window's
// self-healing round) runs every adapter, and so does a retry in which all
// have settled but the resource is still not Reconciled.
func (r *reconciler) roundAdapters() []string {
	if !r.retry || r.wake || r.settledAt != r.latest {
		return r.adapters
	}
	var rest []string
	for _, name := range r.adapters {
		if !slices.Contains(r.settled, name) {
			rest = append(rest, name)
		}
	}
	if len(rest) == 0 {
		return r.adapters
	}
	return rest
}

// observe reads the resource back and folds what the API says into the
// workflow's view. gone is true when the resource no longer exists: the
// workflow's job is done.
func (r *reconciler) observe(ctx workflow.Context) (gone bool, err error) {
	state, err := r.readResource(ctx)
	if err != nil {
		return false, err
	}
	if state.Gone {
		r.phase = PhaseFinished
		r.log.Info("resource removed: reconcile finished", "round", r.round)
		return true, nil
	}
	if state.Generation > r.latest {
		r.latest = state.Generation // a bump whose signal has not arrived yet
	}
	r.reconciled = state.Reconciled
	r.reason = state.Reason
	r.settled, r.settledAt = state.Settled, state.Generation
	r.upsertAttributes(ctx)
	return false, nil
}

// backoff is the wait before re-running a resource that is not Reconciled:
// InitialBackoff doubling per failed round, capped at MaxBackoff.
func (r *reconciler) backoff() time.Duration {
	d := r.opts.InitialBackoff
	for i := 0; i < r.failures && d < r.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.opts.MaxBackoff)
}

// wait sleeps until the timer fires (true) or a signal asks for a round.
func (r *reconciler) wait(ctx workflow.Context, d time.Duration) (fired bool) {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, d)
	for {
		fired = false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { fired = true })
		sel.AddReceive(r.signals, func(c workflow.ReceiveChannel, _ bool) {
			var s Signal
			c.Receive(ctx, &s)
			r.apply(s)
		})
		sel.Select(ctx)
		if r.latest > r.target || r.wake {
			return false
		}
		if fired {
			return true
		}
	}
}

// drainSignals applies every signal received so far without blocking.
func (r *reconciler) drainSignals(ctx workflow.Context) {
	for {
		var s Signal
		if !r.signals.ReceiveAsync(&s) {
			return
		}
		r.apply(s)
	}
}

func (r *reconciler) apply(s Signal) {
	if s.Generation > r.latest {
		r.latest = s.Generation
	}
	if s.Adapters != nil {
		if next := sortedCopy(s.Adapters); !slices.Equal(next, r.adapters) {
			r.adapters, r.wake = next, true
		}
	}
	if s.Options != nil {
		r.opts = s.Options.WithDefaults()
	}
	if s.wakes() {
		r.wake = true
	}
	if s.Reason == ReasonRemoved {
		r.checkFirst = true
	}
}

// superseded reports whether a newer generation than the round's is known;
// the round then stops acting on the old one.
func (r *reconciler) superseded(ctx workflow.Context) bool {
	r.drainSignals(ctx)
	return r.latest > r.target
}

// runAdapters runs the adapters' three phases, adapters in parallel.
func (r *reconciler) runAdapters(ctx workflow.Context, adapters []string) {
	wg := workflow.NewWaitGroup(ctx)
	for _, name := range adapters {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			outcome, detail := r.runAdapter(ctx, name)
			r.outcomes[name] = AdapterView{Generation: r.target, Outcome: outcome, Detail: detail, FinishedAt: workflow.Now(ctx)}
			if outcome == OutcomeError || outcome == OutcomeFailed {
				r.log.Warn("adapter did not succeed", "adapter", name, "generation", r.target, "outcome", outcome, "detail", detail)
			}
		})
	}
	wg.Wait(ctx)
}

func (r *reconciler) runAdapter(ctx workflow.Context, name string) (outcome, detail string) {
	var prep, applied, reported PhaseResult
	if err := workflow.ExecuteActivity(r.adapterContext(ctx, name, 2*time.Minute), ActivityPrepare,
		PrepareInput{Event: r.ref.Event(r.target)}).Get(ctx, &prep); err != nil {
		return OutcomeError, activityError("prepare", err)
	}
	if r.superseded(ctx) {
		return OutcomeSuperseded, "a newer generation arrived after prepare"
	}
	applied = prep
	if prep.Summary.Proceed() && !prep.Summary.Applied {
		if err := workflow.ExecuteActivity(r.adapterContext(ctx, name, 10*time.Minute), ActivityApply,
			prep.State).Get(ctx, &applied); err != nil {
			return OutcomeError, activityError("apply", err)
		}
		if r.superseded(ctx) {
			return OutcomeSuperseded, "a newer generation arrived after apply"
		}
	}
	if err := workflow.ExecuteActivity(r.adapterContext(ctx, name, 2*time.Minute), ActivityReport,
		applied.State).Get(ctx, &reported); err != nil {
		return OutcomeError, activityError("report", err)
	}
	s := reported.Summary
	switch {
	case s.Gone:
		return OutcomeGone, s.SkipReason
	case s.ExecutionStatus == "failed":
		return OutcomeFailed, s.ErrorPhase + ": " + s.Error
	case s.ResourcesSkipped:
		return OutcomeSkipped, s.SkipReason
	}
	return OutcomeSuccess, ""
}

// adapterContext routes a phase to the adapter's own task queue. A queue no
// worker polls fails after ScheduleToStart instead of holding the round.
func (r *reconciler) adapterContext(ctx workflow.Context, adapter string, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              AdapterTaskQueue(adapter),
		ScheduleToStartTimeout: 5 * time.Minute,
		StartToCloseTimeout:    timeout,
		HeartbeatTimeout:       r.opts.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{ErrConfig, ErrRejected},
		},
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

// readResource asks the API where the resource stands; it retries until the
// API answers.
func (r *reconciler) readResource(ctx workflow.Context) (ResourceState, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			NonRetryableErrorTypes: []string{ErrConfig},
		},
	})
	var st ResourceState
	err := workflow.ExecuteActivity(actx, ActivityReadResource, r.ref).Get(ctx, &st)
	return st, err
}

func (r *reconciler) upsertAttributes(ctx workflow.Context) {
	now := attrValues{generation: r.latest, reconciled: r.reconciled}
	if r.attrs != nil && *r.attrs == now {
		return
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		AttrKind.ValueSet(r.ref.Kind), AttrResourceID.ValueSet(r.ref.ID),
		AttrGeneration.ValueSet(now.generation), AttrReconciled.ValueSet(now.reconciled))
	if err != nil {
		r.log.Warn("search attributes not updated", "error", err)
		return
	}
	r.attrs = &now
}

// continueAsNew starts a fresh run with the same state, so a resource that
// lives for months keeps a bounded history. Pending signals are folded in
// first: a signal left in the channel would be lost.
func (r *reconciler) continueAsNew(ctx workflow.Context) error {
	r.drainSignals(ctx)
	carry := &Carry{Round: r.round, Failures: r.failures, Reconciled: r.reconciled,
		Wake: r.wake, CheckFirst: r.checkFirst, Adapters: map[string]AdapterView{}}
	for k, v := range r.outcomes {
		carry.Adapters[k] = v
	}
	r.log.Info("continuing as new", "generation", r.latest, "round", r.round)
	return workflow.NewContinueAsNewError(ctx, WorkflowName, Input{
		Ref: r.ref, Generation: r.latest, Adapters: r.adapters, Options: r.opts, Carry: carry,
	})
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
