package reconcile

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"
)

// This file is protocol 1 (ProtocolPhases), kept so that workflows started
// before protocol 2 replay exactly as they ran: three activities per
// adapter, a read-back activity, and the same backoff after every round
// that did not reconcile. Do not change what it does; a running protocol 1
// workflow moves to protocol 2 by continuing as new at its next round.

// runPhases is protocol 1's loop.
func (r *reconciler) runPhases(ctx workflow.Context) error {
	for {
		// A worker with protocol 2 moves a running protocol 1 workflow over
		// at its next round. The change id names the round: replaying a
		// history recorded by protocol 1 finds no marker for it and goes on
		// as recorded, while a live round finds none either and upgrades.
		if workflow.GetVersion(ctx, fmt.Sprintf("protocol-2-at-round-%d", r.round), workflow.DefaultVersion, 1) == 1 {
			return r.continueAsNew(ctx)
		}
		if r.roundsRun >= r.opts.RoundsPerRun || (r.roundsRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			return r.continueAsNew(ctx)
		}
		r.drainSignals(ctx)
		if r.checkFirst {
			r.checkFirst = false
			gone, err := r.observePhases(ctx)
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
		r.runAdapterPhases(ctx, adapters)

		gone, err := r.observePhases(ctx)
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
		fired := r.waitPhases(ctx, wait)
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

// observePhases reads the resource back with an activity and folds what
// the API says into the workflow's view. gone is true when the resource no
// longer exists: the workflow's job is done.
func (r *reconciler) observePhases(ctx workflow.Context) (gone bool, err error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         readRetry,
	})
	var state ResourceState
	if err := workflow.ExecuteActivity(actx, ActivityReadResource, r.ref).Get(ctx, &state); err != nil {
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

// waitPhases sleeps until the timer fires (true) or a signal asks for a
// round.
func (r *reconciler) waitPhases(ctx workflow.Context, d time.Duration) (fired bool) {
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

// applyPhases folds a signal into protocol 1's state.
func (r *reconciler) applyPhases(s Signal) {
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
	if s.Reason == ReasonRemoved || s.Reason == ReasonChildRemoved {
		r.wake = true
	}
	if s.Reason == ReasonRemoved {
		r.checkFirst = true
	}
}

// runAdapterPhases runs the adapters' three phases, adapters in parallel.
func (r *reconciler) runAdapterPhases(ctx workflow.Context, adapters []string) {
	wg := workflow.NewWaitGroup(ctx)
	for _, name := range adapters {
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			outcome, detail := r.runAdapterThreePhases(ctx, name)
			r.outcomes[name] = AdapterView{Generation: r.target, Outcome: outcome, Detail: detail, FinishedAt: workflow.Now(ctx)}
			if outcome == OutcomeError || outcome == OutcomeFailed {
				r.log.Warn("adapter did not succeed", "adapter", name, "generation", r.target, "outcome", outcome, "detail", detail)
			}
		})
	}
	wg.Wait(ctx)
}

func (r *reconciler) runAdapterThreePhases(ctx workflow.Context, name string) (outcome Outcome, detail string) {
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
			PhaseInput{State: prep.State}).Get(ctx, &applied); err != nil {
			return OutcomeError, activityError("apply", err)
		}
		if r.superseded(ctx) {
			return OutcomeSuperseded, "a newer generation arrived after apply"
		}
	}
	if err := workflow.ExecuteActivity(r.adapterContext(ctx, name, 2*time.Minute), ActivityReport,
		PhaseInput{State: applied.State}).Get(ctx, &reported); err != nil {
		return OutcomeError, activityError("report", err)
	}
	return outcomeOf(reported.Summary)
}

// outcomeOf reads an adapter run's outcome from its summary.
func outcomeOf(s Summary) (outcome Outcome, detail string) {
	switch {
	case s.Gone:
		return OutcomeGone, s.SkipReason
	case s.ExecutionStatus == ExecutionFailed:
		return OutcomeFailed, s.ErrorPhase + ": " + s.Error
	case s.ResourcesSkipped:
		return OutcomeSkipped, s.SkipReason
	}
	return OutcomeSuccess, ""
}
