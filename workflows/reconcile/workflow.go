package reconcile

import (
	"errors"
	"maps"
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
	return r.run(ctx)
}

// reconciler is the workflow's state. Everything here is deterministic:
// time comes from workflow.Now, adapters are iterated in sorted order.
type reconciler struct {
	ref      Ref
	tenant   string // the resource's tenancy, canonical form ("" without)
	opts     Options
	adapters []string
	// optional adapters run in the background of rounds (startOptional):
	// optPending are those asked for, inflight those with a run under way,
	// again those asked for while it was, to run once more at the newest
	// generation.
	optional   []string
	optPending map[string]bool
	inflight   map[string]bool
	again      map[string]bool
	signals    workflow.ReceiveChannel
	log        log.Logger

	latest     int64 // newest generation known
	target     int64 // generation of the current round
	round      int64 // rounds over the workflow's whole life
	roundsRun  int   // rounds in this run, for continue-as-new
	failures   int   // rounds since last Reconciled or progress, for the backoff
	reconciled bool
	deleting   bool
	reason     string
	phase      Phase
	nextRound  time.Time
	waitCause  WaitCause
	// cause is why the next round runs, for its log line and the rounds
	// metric (RoundCause).
	cause    RoundCause
	outcomes map[string]AdapterView

	// settled are the adapters whose stored report already says they are
	// done (Available, or Finalized while deleting) at generation settledAt,
	// as read back after the last round.
	settled   []string
	settledAt int64

	// wake asks for a round now although no newer generation is known.
	wake bool
	// pending are the adapters the next round runs, all of them when all
	// is set.
	pending map[string]bool
	all     bool
	// seen is, per adapter, the digest of each object its last run
	// discovered: a change notice for a state already seen runs nothing.
	seen map[string]map[string]string
	// watched is, per adapter, whether its worker watches every object its
	// last run applied (RunResult.Watched): it picks the safety-net
	// window and the backoff of a round waiting on watched objects.
	watched map[string]bool
	// recheck is, per adapter, when a time-based precondition of its last
	// run gives another answer (RunResult.RecheckAt).
	recheck map[string]time.Time
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
	r.optional = sortedCopy(in.Optional)
	r.optPending, r.inflight, r.again = map[string]bool{}, map[string]bool{}, map[string]bool{}
	r.outcomes = map[string]AdapterView{}
	r.pending = map[string]bool{}
	r.seen = map[string]map[string]string{}
	r.watched = map[string]bool{}
	r.recheck = map[string]time.Time{}
	r.phase = PhaseRunning
	// A new run starts with a round of every adapter, unless it carries a
	// narrower request over from continue-as-new.
	r.all = true
	if c := in.Carry; c != nil {
		r.round, r.failures, r.reconciled = c.Round, c.Failures, c.Reconciled
		r.wake, r.checkFirst = c.Wake, c.CheckFirst
		for k, v := range c.Adapters {
			r.outcomes[k] = v
		}
		r.settled, r.settledAt, r.deleting = c.Settled, c.SettledAt, c.Deleting
		for k, v := range c.Seen {
			r.seen[k] = v
		}
		maps.Copy(r.watched, c.Watched)
		maps.Copy(r.recheck, c.Recheck)
		r.cause = c.Cause
		// The pending round is exactly what it was (none at all when none
		// was pending), and the generation it acted on is the newest known.
		r.all, r.target = c.All, r.latest
		r.ask(c.Pending...)
	}
	r.attrs = startAttributes(ctx, r.ref)
	// The tenancy comes with the input; HyperFleetTenant, which the
	// relay sets with it, stands in for an input without one.
	r.tenant = in.Tenant
	if r.tenant == "" {
		r.tenant, _ = workflow.GetTypedSearchAttributes(ctx).GetKeyword(AttrTenant)
	}
	r.signals = workflow.GetSignalChannel(ctx, SignalName)
	r.log = log.With(workflow.GetLogger(ctx), "kind", r.ref.Kind, "resource_id", r.ref.ID)
	if r.tenant != "" {
		r.log = log.With(r.log, "tenant", r.tenant)
	}
	return workflow.SetQueryHandler(ctx, QueryName, r.view)
}

func (r *reconciler) view() (View, error) {
	out := View{Ref: r.ref, Generation: r.latest, Target: r.target, Round: r.round, Phase: r.phase,
		Reconciled: r.reconciled, Reason: r.reason, NextRound: r.nextRound, NextRoundCause: r.waitCause,
		Adapters: map[string]AdapterView{}, Tenant: r.tenant,
		Optional: slices.Clone(r.optional), Running: sortedKeys(r.inflight)}
	for k, v := range r.outcomes {
		out.Adapters[k] = v
	}
	return out, nil
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

// drainSignals applies every signal received so far without blocking.
func (r *reconciler) drainSignals(ctx workflow.Context) {
	for {
		var s Signal
		if !r.signals.ReceiveAsync(&s) {
			return
		}
		r.applyChange(s)
	}
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

// adapterContext routes an adapter activity to the adapter's own task
// queue. A queue no worker polls fails after ScheduleToStart instead of
// holding the round.
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

// readRetry is the retry policy of the read-back: until the API answers.
var readRetry = &temporal.RetryPolicy{
	InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
	NonRetryableErrorTypes: []string{ErrConfig},
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
// first: a signal left in the channel would be lost. The new run starts on
// the deployment's current version (AutoUpgrade for its first task, then
// pinned there): every continue-as-new is a safe point to take a new
// release, whatever code the next run has.
func (r *reconciler) continueAsNew(ctx workflow.Context) error {
	r.drainSignals(ctx)
	// An optional adapter's run under way ends with this run (its result
	// would reach no one): the next run starts it again.
	pending := maps.Clone(r.pending)
	for _, set := range []map[string]bool{r.optPending, r.inflight} {
		for a := range set {
			pending[a] = true
		}
	}
	carry := &Carry{Round: r.round, Failures: r.failures, Reconciled: r.reconciled,
		Wake: r.wake, CheckFirst: r.checkFirst, Adapters: map[string]AdapterView{},
		All: r.all, Pending: sortedKeys(pending),
		Settled: r.settled, SettledAt: r.settledAt, Deleting: r.deleting, Cause: r.cause}
	for k, v := range r.outcomes {
		carry.Adapters[k] = v
	}
	if len(r.seen) > 0 {
		carry.Seen = r.seen
	}
	if len(r.watched) > 0 {
		carry.Watched = r.watched
	}
	if len(r.recheck) > 0 {
		carry.Recheck = r.recheck
	}
	if carry.Pending == nil {
		carry.Pending = []string{}
	}
	r.log.Info("continuing as new", "generation", r.latest, "round", r.round)
	next := NewInput(r.ref, r.latest, r.adapters, r.opts)
	next.Optional, next.Carry, next.Tenant = r.optional, carry, r.tenant
	return workflow.NewContinueAsNewErrorWithOptions(ctx,
		workflow.ContinueAsNewErrorOptions{InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade},
		WorkflowName, next)
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
