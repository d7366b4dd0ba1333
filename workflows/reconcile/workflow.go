package reconcile

import (
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Workflow reconciles one resource until it is gone.
//
// On versioned workers it is pinned: a run stays on the worker deployment
// version it started on, so a release may change this code freely. A run
// moves to a newer version only by continuing as new, which it does at its
// next safe point (between rounds) once Temporal says the deployment's
// current version changed, and at every continue-as-new for history
// length. A ReasonUpgrade signal gives an idle run the task in which it
// learns that.
func Workflow(ctx workflow.Context, in Input) error {
	r := &reconciler{}
	if err := r.setup(ctx, in); err != nil {
		return err
	}
	return r.loop(ctx)
}

// reconciler is the workflow's state, in four parts: what this run
// reconciles and how, each adapter's state, the rounds, and what the API
// said after the last one. Everything here is deterministic: time comes
// from workflow.Now, adapters are iterated in sorted order.
type reconciler struct {
	run      runContext
	adapters adapterTable
	round    roundState
	last     readBack
}

// runContext is what the run reconciles and how.
type runContext struct {
	ref    Ref
	tenant string // the resource's tenancy, canonical form ("" without)
	opts   Options
	// local runs the required adapters hosted beside the reconciler as
	// local activities (Input.LocalRuns).
	local   bool
	signals workflow.ReceiveChannel
	log     log.Logger
	// attrs are the search attribute values last written, so unchanged
	// values do not add history events.
	attrs *attrValues
}

// roundState is where the rounds stand: their numbers, what the next one
// runs and why, and the wait before it.
type roundState struct {
	latest int64 // newest generation known
	target int64 // generation of the current round
	number int64 // rounds over the workflow's whole life
	inRun  int   // rounds in this run, for continue-as-new
	// failures counts rounds since the last Reconciled or progress, for
	// the backoff.
	failures int
	// cause is why the next round runs, for its log line and the rounds
	// metric (RoundCause); ran is why the current (or last) one ran.
	cause, ran RoundCause
	// all asks the next round to run every adapter; wake asks for a round
	// although no adapter is asked for (the resource is read again).
	all, wake bool
	// checkFirst asks to read the resource before running adapters: the
	// API said it was removed.
	checkFirst bool
	phase      Phase
	nextRound  time.Time
	waitCause  WaitCause
}

// readBack is what the API said of the resource after the last round.
type readBack struct {
	reconciled bool
	deleting   bool
	reason     string
	// settled are the adapters whose stored report says they are done
	// (Available, or Finalized while deleting) at generation settledAt.
	settled   []string
	settledAt int64
}

type attrValues struct {
	generation int64
	reconciled bool
}

func (r *reconciler) setup(ctx workflow.Context, in Input) error {
	// The input may come from anyone who can start a workflow: the
	// reference is what this run's activities call, with the workers'
	// credentials, so it must name a resource of the API and nothing else.
	if err := in.Ref.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError("the workflow input names no resource of the API: "+err.Error(), ErrConfig, err)
	}
	r.run = runContext{ref: in.Ref, opts: in.Options.WithDefaults(), local: in.LocalRuns, tenant: in.Tenant}
	r.adapters = newAdapterTable(in.Adapters, in.Optional)
	r.round = roundState{latest: in.Generation, phase: PhaseRunning, all: true}
	// A new run starts with a round of every adapter, unless it carries a
	// narrower request over from continue-as-new.
	if c := in.Carry; c != nil {
		r.resume(c)
	}
	r.run.attrs = startAttributes(ctx, r.run.ref)
	// The tenancy comes with the input; HyperFleetTenant, which the
	// relay sets with it, stands in for an input without one.
	if r.run.tenant == "" {
		r.run.tenant, _ = workflow.GetTypedSearchAttributes(ctx).GetKeyword(AttrTenant)
	}
	r.run.signals = workflow.GetSignalChannel(ctx, SignalName)
	r.run.log = log.With(workflow.GetLogger(ctx), "kind", r.run.ref.Kind, "resource_id", r.run.ref.ID)
	if r.run.tenant != "" {
		r.run.log = log.With(r.run.log, "tenant", r.run.tenant)
	}
	return workflow.SetQueryHandler(ctx, QueryName, r.view)
}

// resume takes over the state the previous run handed over.
func (r *reconciler) resume(c *Carry) {
	r.round.number, r.round.failures = c.Round, c.Failures
	r.round.wake, r.round.checkFirst, r.round.cause = c.Wake, c.CheckFirst, c.Cause
	r.last = readBack{reconciled: c.Reconciled, deleting: c.Deleting, settled: c.Settled, settledAt: c.SettledAt}
	// The pending round is exactly what it was (none at all when none
	// was pending), and the generation it acted on is the newest known.
	r.round.all, r.round.target = c.All, r.round.latest
	for name, s := range c.adapterStates() {
		r.adapters.get(name).restore(s)
	}
}

func (r *reconciler) view() (View, error) {
	out := View{Ref: r.run.ref, Generation: r.round.latest, Target: r.round.target, Round: r.round.number, Phase: r.round.phase,
		Reconciled: r.last.reconciled, Reason: r.last.reason, NextRound: r.round.nextRound, NextRoundCause: r.round.waitCause,
		Adapters: map[string]AdapterView{}, Tenant: r.run.tenant, RoundCause: r.round.ran,
		Required: slices.Clone(r.adapters.required), Optional: slices.Clone(r.adapters.optional)}
	out.Running, out.RunningAt = r.adapters.running()
	if len(out.RunningAt) == 0 {
		out.RunningAt = nil
	}
	for name, s := range r.adapters.state {
		if s.ran {
			out.Adapters[name] = s.last
		}
	}
	return out, nil
}

// backoff is the wait before re-running a resource that is not Reconciled:
// InitialBackoff doubling per failed round, capped at MaxBackoff.
func (r *reconciler) backoff() time.Duration {
	o := r.run.opts
	d := o.InitialBackoff
	for i := 0; i < r.round.failures && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

// drainSignals applies every signal received so far without blocking.
func (r *reconciler) drainSignals() {
	for {
		var s Signal
		if !r.run.signals.ReceiveAsync(&s) {
			return
		}
		r.applyChange(s)
	}
}

// startAttributes are the search attribute values the run started with,
// nil unless they name this resource and carry both values.
func startAttributes(ctx workflow.Context, ref Ref) *attrValues {
	sa := workflow.GetTypedSearchAttributes(ctx)
	kind, okKind := sa.GetKeyword(AttrKind)
	id, okID := sa.GetKeyword(AttrResourceID)
	gen, okGen := sa.GetInt64(AttrGeneration)
	rec, okRec := sa.GetBool(AttrReconciled)
	if !okKind || !okID || !okGen || !okRec || kind != ref.Kind || id != ref.ID {
		return nil
	}
	return &attrValues{generation: gen, reconciled: rec}
}

func (r *reconciler) upsertAttributes(ctx workflow.Context) {
	now := attrValues{generation: r.round.latest, reconciled: r.last.reconciled}
	if r.run.attrs != nil && *r.run.attrs == now {
		return
	}
	ref := r.run.ref
	err := workflow.UpsertTypedSearchAttributes(ctx,
		AttrKind.ValueSet(ref.Kind), AttrResourceID.ValueSet(ref.ID),
		AttrGeneration.ValueSet(now.generation), AttrReconciled.ValueSet(now.reconciled))
	if err != nil {
		r.run.log.Warn("search attributes not updated", "error", err)
		return
	}
	r.run.attrs = &now
}

// continueAsNew starts a fresh run with the same state, so a resource that
// lives for months keeps a bounded history. Pending signals are folded in
// first: a signal left in the channel would be lost. The new run starts on
// the deployment's current version (AutoUpgrade for its first task, then
// pinned there): every continue-as-new is a safe point to take a new
// release, whatever code the next run has.
func (r *reconciler) continueAsNew(ctx workflow.Context) error {
	r.drainSignals()
	carry := &Carry{Round: r.round.number, Failures: r.round.failures, Reconciled: r.last.reconciled,
		Wake: r.round.wake, CheckFirst: r.round.checkFirst, All: r.round.all, Cause: r.round.cause,
		Settled: r.last.settled, SettledAt: r.last.settledAt, Deleting: r.last.deleting,
		States: r.adapters.snapshot()}
	r.run.log.Info("continuing as new", "generation", r.round.latest, "round", r.round.number)
	next := NewInput(r.run.ref, r.round.latest, r.adapters.required, r.run.opts)
	next.Optional, next.Carry, next.Tenant = r.adapters.optional, carry, r.run.tenant
	return workflow.NewContinueAsNewErrorWithOptions(ctx,
		workflow.ContinueAsNewErrorOptions{InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade},
		WorkflowName, next)
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
