// Package reconcile is the reconcile workflow: one per cluster or node pool,
// started or signalled on every generation bump, running every registered
// adapter for the newest generation and re-running them on a durable backoff
// until the resource is Reconciled, then after a stability window for
// self-healing, until the resource is gone.
//
// This file is the contract shared with the activities (which implement
// the named activities) and the API's outbox relay (which starts and
// signals the workflow): names, identifiers and payload types.
package reconcile

import (
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Metrics the workflow records through its metrics handler (the worker
// exports them to Prometheus; timers become histograms in seconds with
// "_seconds" appended), tagged with the resource kind; rounds also with
// their cause (RoundCause).
const (
	MetricRounds        = "hyperfleet_reconcile_rounds_total"
	MetricRoundDuration = "hyperfleet_reconcile_round_duration"
	MetricBackoff       = "hyperfleet_reconcile_backoff"
)

// Names registered with Temporal.
const (
	WorkflowName = "ReconcileResource"
	SignalName   = "reconcile"
	QueryName    = "state"
	// TaskQueue is where the reconcile workflows and ReadResource run.
	TaskQueue = "hyperfleet-reconciler"

	// ActivityRun runs one adapter for one round: params, preconditions,
	// resources and the status report, in one activity task.
	ActivityRun = "AdapterRun"
	// ActivityReadResource reads the resource back after a round; the
	// workflow runs it as a local activity on the reconciler's worker.
	ActivityReadResource = "ReadResource"
)

// Error types an activity returns for failures retrying cannot fix.
const (
	ErrConfig   = "AdapterConfigError"
	ErrRejected = "StatusRejected"
)

// WorkflowID is the one workflow of a resource: hyperfleet-cluster-<id>.
func WorkflowID(kind, id string) string {
	return "hyperfleet-" + strings.ToLower(kind) + "-" + id
}

// AdapterTaskQueue is the task queue of one adapter's activities, so each
// adapter can run in its own worker deployment with its own credentials.
func AdapterTaskQueue(adapter string) string { return "hyperfleet-adapter-" + adapter }

// Search attributes that find a resource's workflows in the Temporal UI:
// HyperFleetResourceID="<id>", HyperFleetReconciled=false, ...
var (
	AttrKind       = temporal.NewSearchAttributeKeyKeyword("HyperFleetKind")
	AttrResourceID = temporal.NewSearchAttributeKeyKeyword("HyperFleetResourceID")
	AttrGeneration = temporal.NewSearchAttributeKeyInt64("HyperFleetGeneration")
	AttrReconciled = temporal.NewSearchAttributeKeyBool("HyperFleetReconciled")
	// AttrTenant names the resource's tenancy in the API's canonical form
	// (HyperFleetTenant="org=acme,project=web") when the API runs with a
	// tenancy file. It is set when the workflow starts and never changes
	// (a resource keeps its tenancy); the workflow does not upsert it, and
	// continue-as-new carries it to the next run with the others. A
	// resource stored before tenancy and adopted later (PUT .../tenancy)
	// lacks it on a workflow that was already running.
	AttrTenant = temporal.NewSearchAttributeKeyKeyword("HyperFleetTenant")
)

// StartAttributes are the search attributes a resource's workflow is
// started with. The workflow takes them as written, so the relay and the
// workflow must agree on them: both use this.
func StartAttributes(ref Ref, generation int64) temporal.SearchAttributes {
	return TenantStartAttributes(ref, generation, "")
}

// TenantStartAttributes are StartAttributes with the resource's tenancy
// (its canonical form) as HyperFleetTenant; "" (no tenancy) leaves it out.
func TenantStartAttributes(ref Ref, generation int64, tenancy string) temporal.SearchAttributes {
	attrs := []temporal.SearchAttributeUpdate{AttrKind.ValueSet(ref.Kind), AttrResourceID.ValueSet(ref.ID),
		AttrGeneration.ValueSet(generation), AttrReconciled.ValueSet(false)}
	if tenancy != "" {
		attrs = append(attrs, AttrTenant.ValueSet(tenancy))
	}
	return temporal.NewSearchAttributes(attrs...)
}

// SearchAttributes lists the custom search attributes to register on the
// namespace.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		AttrKind.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrResourceID.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrGeneration.GetName(): enumspb.INDEXED_VALUE_TYPE_INT,
		AttrReconciled.GetName(): enumspb.INDEXED_VALUE_TYPE_BOOL,
		AttrTenant.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// Ref names the resource a workflow reconciles (the API's own reference:
// its JSON is part of the workflow's input, so it must not change shape).
type Ref = resource.Ref

// RefOf is the Ref of a resource of a kind in the table.
var RefOf = resource.RefOf

// Options tune a workflow; they travel in its input (and across
// continue-as-new) so a replay always sees the values it ran with.
type Options struct {
	// InitialBackoff is the first wait before re-running a resource that is
	// not Reconciled (default 1s); it doubles up to MaxBackoff (default 60s).
	InitialBackoff time.Duration `json:"initial_backoff"`
	MaxBackoff     time.Duration `json:"max_backoff"`
	// StabilityWindow is the wait before the safety-net round of a
	// Reconciled resource when something its adapters apply is not
	// watched (default 30m): without a watch, drift is found only by a
	// round.
	StabilityWindow time.Duration `json:"stability_window"`
	// WatchedStabilityWindow is that wait when the last run of every
	// adapter said all it applies is watched (RunResult.Watched; default
	// 10h). Watches repair drift within seconds; this round only catches
	// what a watch could miss, so an idle fleet costs almost nothing.
	WatchedStabilityWindow time.Duration `json:"watched_stability_window,omitempty"`
	// RoundsPerRun bounds one run's history before continue-as-new
	// (default 100).
	RoundsPerRun int `json:"rounds_per_run"`
	// HeartbeatTimeout is how long an adapter activity may go silent before
	// Temporal retries it elsewhere (default 20s): how fast a crashed
	// worker's work moves on.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout"`
	// StabilityJitter spreads self-healing rounds over ± this fraction of
	// the window (default 0.1; negative: none), so resources created
	// together do not come back together every window.
	StabilityJitter float64 `json:"stability_jitter,omitempty"`
}

// DefaultWatchedStabilityWindow is the safety-net window of a resource
// whose adapters' objects are all watched: at three adapters a round costs
// about five Temporal actions, so about one action every two hours.
const DefaultWatchedStabilityWindow = 10 * time.Hour

// watchedBackoffFactor is how many initial backoffs a round waits when
// every adapter not done waits only on objects its worker watches.
const watchedBackoffFactor = 10

// watchedBackoff is the shortest wait after a round that waits only on
// watched objects: ten initial backoffs (10 s by default), at most the
// longest backoff. The watch says when those objects change, usually
// sooner; a 1-s timer would only run a round that finds them unchanged.
func (o Options) watchedBackoff() time.Duration {
	return min(watchedBackoffFactor*o.InitialBackoff, o.MaxBackoff)
}

// WithDefaults fills unset options.
func (o Options) WithDefaults() Options {
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 60 * time.Second
	}
	if o.StabilityWindow <= 0 {
		o.StabilityWindow = 30 * time.Minute
	}
	if o.WatchedStabilityWindow <= 0 {
		o.WatchedStabilityWindow = DefaultWatchedStabilityWindow
	}
	// A watched resource never waits less than an unwatched one.
	o.WatchedStabilityWindow = max(o.WatchedStabilityWindow, o.StabilityWindow)
	if o.RoundsPerRun <= 0 {
		o.RoundsPerRun = 100
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 20 * time.Second
	}
	switch {
	case o.StabilityJitter == 0:
		o.StabilityJitter = 0.1
	case o.StabilityJitter < 0:
		o.StabilityJitter = -1 // explicit "none", kept through defaults
	case o.StabilityJitter > 0.5:
		o.StabilityJitter = 0.5
	}
	return o
}

// NewInput is the input the relay starts a resource's workflow with, and
// a run continues as new with.
func NewInput(ref Ref, generation int64, adapters []string, opts Options) Input {
	return Input{Ref: ref, Generation: generation, Adapters: adapters, Options: opts, LocalRuns: true}
}

// Input starts (or continues) a workflow.
type Input struct {
	Ref        Ref      `json:"ref"`
	Generation int64    `json:"generation"`
	Adapters   []string `json:"adapters"`
	// Optional adapters run with the rounds and report, but the workflow
	// never waits for them: a round does not wait for their runs, and
	// whether they are done never decides a retry or progress (see
	// rounds.go).
	Optional []string `json:"optional,omitempty"`
	Options  Options  `json:"options"`
	// LocalRuns runs each required adapter the reconciler's own worker
	// hosts as a local activity of the workflow (no task queue, no
	// dispatch through Temporal's matching service: a round of three
	// adapters is one workflow task), and the others on their task queues.
	// Every input this release writes sets it; runs of the previous
	// release, which ran every adapter on its task queue, keep doing so
	// until they continue as new (their histories replay unchanged).
	LocalRuns bool `json:"local_runs,omitempty"`
	// Carry is the state handed over by continue-as-new.
	Carry *Carry `json:"carry,omitempty"`
	// Tenant is the resource's tenancy in the API's canonical form
	// (org=acme,project=web) when the API runs with a tenancy file; ""
	// without. The workflow logs it, shows it in its state query and
	// hands it to the next run; HyperFleetTenant holds the same value.
	Tenant string `json:"tenant,omitempty"`
}

// Signal tells a running workflow that its resource changed. The relay
// sends its current adapter list and options with every signal, so a
// registration or configuration change reaches running workflows.
type Signal struct {
	Generation int64  `json:"generation"`
	Reason     Reason `json:"reason,omitempty"`
	// Adapters, when not null, replaces the workflow's adapter list;
	// Optional, when not null, its optional adapters.
	Adapters []string `json:"adapters"`
	Optional []string `json:"optional"`
	Options  *Options `json:"options,omitempty"`
	// Changed names the adapters whose managed objects changed (reason
	// ReasonObjectChanged); Objects says which objects and their state
	// after the change. An adapter whose last run already saw every one of
	// its objects in that state needs no round; the others run.
	Changed []string       `json:"changed,omitempty"`
	Objects []ObjectChange `json:"objects,omitempty"`
	// Detail says what changed, for the workflow's log.
	Detail string `json:"detail,omitempty"`
}

// Reason is why a signal was sent.
type Reason string

// Signal reasons. The API's outbox reasons (created, updated, deleting) ask
// for the new generation; the ones below wake the workflow without a bump.
const (
	// ReasonRemoved: the resource was removed from the API; the workflow
	// checks and completes instead of waiting out its timer.
	ReasonRemoved Reason = "removed"
	// ReasonChildRemoved: one of a cluster's node pools was removed; a
	// deleting cluster can go on without waiting for its backoff.
	ReasonChildRemoved Reason = "child-removed"
	// ReasonResync: the relay (re)started and makes sure a workflow runs.
	ReasonResync Reason = "resync"
	// ReasonObjectChanged: an object an adapter manages changed status, was
	// modified or was deleted behind its back.
	ReasonObjectChanged Reason = "object-changed"
	// ReasonParentReconciled: the resource's parent became Reconciled (a
	// new generation of it took effect, or it recovered). A child that is
	// not Reconciled runs its adapters not done at once: they may have
	// been waiting for the parent. The API writes it to the outbox, with
	// the child's generation, only for such children.
	ReasonParentReconciled Reason = "parent-reconciled"
	// ReasonUpgrade: a newer worker deployment version is current. The
	// signal runs nothing; it gives a workflow pinned to an older version a
	// task in which it sees that and continues as new onto the current one
	// (see Workflow).
	ReasonUpgrade Reason = "upgrade"
)

// Carry is what survives continue-as-new.
type Carry struct {
	Round      int64 `json:"round"`
	Failures   int   `json:"failures"`
	Reconciled bool  `json:"reconciled"`
	// States is each adapter's state.
	States map[string]AdapterState `json:"states,omitempty"`
	// Wake and CheckFirst carry a pending request for a round (and a
	// removal check) made by a signal just before continue-as-new; All
	// asks it to run every adapter.
	Wake       bool `json:"wake,omitempty"`
	CheckFirst bool `json:"check_first,omitempty"`
	All        bool `json:"all,omitempty"`
	// Settled and Deleting are the last read-back.
	Settled   []string `json:"settled,omitempty"`
	SettledAt int64    `json:"settled_at,omitempty"`
	Deleting  bool     `json:"deleting,omitempty"`
	// Cause is why the pending round runs.
	Cause RoundCause `json:"cause,omitempty"`

	// The previous release kept each kind of adapter state in a map of
	// its own; its runs continuing as new onto this one hand them over so.
	// Read, never written: each adapter's last outcome, what its last run
	// saw, whether all it applies is watched, when a time-based
	// precondition changes its answer, and the adapters the pending round
	// runs.
	Adapters map[string]AdapterView       `json:"adapters,omitempty"`
	Seen     map[string]map[string]string `json:"seen,omitempty"`
	Watched  map[string]bool              `json:"watched,omitempty"`
	Recheck  map[string]time.Time         `json:"recheck,omitempty"`
	Pending  []string                     `json:"pending,omitempty"`
}

// AdapterState is one adapter's state as continue-as-new hands it over.
type AdapterState struct {
	// Last is its last run's outcome; nil when none ran.
	Last *AdapterView `json:"last,omitempty"`
	// Seen is the digest of each object its last run discovered.
	Seen map[string]string `json:"seen,omitempty"`
	// Watched says its last run said all it applies is watched.
	Watched bool `json:"watched,omitempty"`
	// RecheckAt is when a time-based precondition of its last run gives
	// another answer.
	RecheckAt time.Time `json:"recheck_at,omitzero"`
	// Asked says the pending round runs it.
	Asked bool `json:"asked,omitempty"`
}

// adapterStates is each adapter's handed-over state, from States or from
// the previous release's maps.
func (c *Carry) adapterStates() map[string]AdapterState {
	out := make(map[string]AdapterState, len(c.States)+len(c.Adapters))
	for name, s := range c.States {
		out[name] = s
	}
	update := func(name string, fn func(*AdapterState)) {
		s := out[name]
		fn(&s)
		out[name] = s
	}
	for name, v := range c.Adapters {
		update(name, func(s *AdapterState) { s.Last = &v })
	}
	for name, seen := range c.Seen {
		update(name, func(s *AdapterState) { s.Seen = seen })
	}
	for name, w := range c.Watched {
		update(name, func(s *AdapterState) { s.Watched = w })
	}
	for name, at := range c.Recheck {
		update(name, func(s *AdapterState) { s.RecheckAt = at })
	}
	for _, name := range c.Pending {
		update(name, func(s *AdapterState) { s.Asked = true })
	}
	return out
}

// RunInput is what an adapter run acts on.
type RunInput struct {
	Event resource.Event `json:"event"`
	// Adapter names the adapter to run: a local run (on the reconciler's
	// worker, which may host several) needs it; an adapter's own task
	// queue already says it.
	Adapter string `json:"adapter,omitempty"`
}

// RunResult is what one adapter run did: where it ended, and each phase's
// outcome and duration, so the Temporal UI shows which phase failed and
// why without reading worker logs.
type RunResult struct {
	Summary Summary       `json:"summary"`
	Phases  []PhaseReport `json:"phases"`
	// Resources lists what the resources phase did to each one, e.g.
	// "testJob=CREATE".
	Resources []string `json:"resources,omitempty"`
	// Seen maps each object the run discovered ("Job ns/name") to its
	// digest (transport.Digest): the state the adapter reported on.
	Seen map[string]string `json:"seen,omitempty"`
	// Watched says the adapter's worker watches every object the adapter
	// applies (each resource's transport watches and stamps the labels its
	// watch selects): their changes of readiness wake the workflow, so a
	// round that waits only on them backs off longer (watchedBackoff).
	Watched bool `json:"watched,omitempty"`
	// Unwatched says why Watched is false (which resource, which
	// transport), for the Temporal UI.
	Unwatched string `json:"unwatched,omitempty"`
	// RecheckAt is when a time-based precondition of the run (stableFor,
	// conditionAge, now()) gives another answer: the workflow runs the
	// adapter again then, even in the middle of a long safety-net window.
	RecheckAt time.Time `json:"recheck_at,omitzero"`
	// Adapter and Generation name the adapter that ran and the
	// generation it ran for, so a local run's marker in the history (which
	// records the result, not the input) says whose run it was.
	Adapter    string `json:"adapter,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// NotHosted answers a local run of an adapter the reconciler's worker
	// does not host: the workflow runs it on the adapter's own task queue.
	NotHosted bool `json:"not_hosted,omitempty"`
}

// ObjectChange is one managed object's change, as an adapter worker's
// watch saw it.
type ObjectChange struct {
	Adapter string `json:"adapter"`
	Object  string `json:"object"`
	// Digest is the object's digest after the change; empty when it was
	// deleted (a deletion always needs a round).
	Digest string `json:"digest,omitempty"`
}

// PhaseReport is one phase of an adapter run.
type PhaseReport struct {
	Phase      phase.Name    `json:"phase"`
	Outcome    phase.Outcome `json:"outcome"`
	Reason     string        `json:"reason,omitempty"`
	DurationMS int64         `json:"duration_ms"`
}

// Summary describes where a run stands.
type Summary struct {
	ExecutionStatus  phase.ExecutionStatus `json:"execution_status"`
	ResourcesSkipped bool                  `json:"resources_skipped"`
	SkipReason       string                `json:"skip_reason,omitempty"`
	Gone             bool                  `json:"gone,omitempty"`
	ErrorPhase       phase.Name            `json:"error_phase,omitempty"`
	Error            string                `json:"error,omitempty"`
	Reported         bool                  `json:"reported,omitempty"`
}

// ResourceState is the API's view of a resource after a round.
type ResourceState struct {
	Gone       bool   `json:"gone"`
	Generation int64  `json:"generation"`
	Deleting   bool   `json:"deleting"`
	Reconciled bool   `json:"reconciled"`
	Reason     string `json:"reason,omitempty"`
	// Settled lists, for a resource not Reconciled, the adapters whose
	// stored report says they are done at Generation: Available=True, or
	// Finalized=True while deleting. A retry round skips them.
	Settled []string `json:"settled,omitempty"`
}

// AdapterView is the last outcome of one adapter.
type AdapterView struct {
	Generation int64     `json:"generation"`
	Outcome    Outcome   `json:"outcome"`
	Detail     string    `json:"detail,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
	// StartedAt is when the run started (zero in views the previous
	// release handed over).
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Outcome is how an adapter's run in a round ended, as the workflow's
// state query shows it.
type Outcome string

// Adapter outcomes.
const (
	OutcomeSuccess Outcome = "success"
	OutcomeSkipped Outcome = "skipped"
	OutcomeFailed  Outcome = "failed"
	OutcomeGone    Outcome = "gone"
	OutcomeError   Outcome = "error"
)

// View is the workflow's answer to the "state" query.
type View struct {
	Ref        Ref       `json:"ref"`
	Generation int64     `json:"generation"`
	Target     int64     `json:"target"`
	Round      int64     `json:"round"`
	Phase      Phase     `json:"phase"`
	Reconciled bool      `json:"reconciled"`
	Reason     string    `json:"reason,omitempty"`
	NextRound  time.Time `json:"next_round,omitempty"`
	// NextRoundCause says what the wait for NextRound is.
	NextRoundCause WaitCause `json:"next_round_cause,omitempty"`
	// Adapters holds the last outcome of every adapter, optional ones
	// included; Required and Optional name the adapters the workflow
	// runs, and Running those whose run is under way (an optional one's
	// does not hold the round), with when it started.
	Adapters  map[string]AdapterView `json:"adapters"`
	Required  []string               `json:"required,omitempty"`
	Optional  []string               `json:"optional,omitempty"`
	Running   []string               `json:"running,omitempty"`
	RunningAt map[string]time.Time   `json:"running_at,omitempty"`
	// RoundCause is why the current (or last) round ran.
	RoundCause RoundCause `json:"round_cause,omitempty"`
	// Tenant is the resource's tenancy ("" without tenancy).
	Tenant string `json:"tenant,omitempty"`
}

// Phase is where a workflow stands, as the query reports it.
type Phase string

// Workflow phases reported by the query.
const (
	PhaseRunning  Phase = "running"
	PhaseBackoff  Phase = "backoff"
	PhaseStable   Phase = "stable"
	PhaseFinished Phase = "finished"
)

// WaitCause is what a workflow between rounds waits for, besides a signal.
type WaitCause string

// Wait causes reported by the query.
const (
	// WaitBackoff: the retry of the adapters not done.
	WaitBackoff WaitCause = "backoff"
	// WaitSafetyNet: the safety-net round of a Reconciled resource whose
	// adapters' objects are all watched (WatchedStabilityWindow).
	WaitSafetyNet WaitCause = "safety-net"
	// WaitSafetyNetUnwatched: the same round when something is not
	// watched (StabilityWindow).
	WaitSafetyNetUnwatched WaitCause = "safety-net-unwatched"
	// WaitTimePrecondition: the moment a time-based precondition gives
	// another answer (RunResult.RecheckAt).
	WaitTimePrecondition WaitCause = "time-precondition"
)

// RoundCause is why a round ran: the cause label of the rounds metric and
// of the round's log line (the operator guide's table of causes and costs).
type RoundCause string

// Round causes.
const (
	// CauseGeneration: a new generation (create, PATCH, DELETE), or a new
	// run's first round.
	CauseGeneration RoundCause = "generation"
	// CauseProgress: the round before made an adapter done.
	CauseProgress RoundCause = "progress"
	// CauseRetry: the backoff of a resource not Reconciled ended.
	CauseRetry RoundCause = "retry"
	// CauseWake: an adapter worker's watch reported a change of an object
	// an adapter applied.
	CauseWake RoundCause = "wake"
	// CauseChild: a node pool of a deleting cluster went away.
	CauseChild RoundCause = "child"
	// CauseParent: the parent (a node pool's cluster) of a waiting
	// resource became Reconciled.
	CauseParent RoundCause = "parent"
	// CauseTimePrecondition: a time-based precondition changed its answer.
	CauseTimePrecondition RoundCause = "time-precondition"
	// CauseSafetyNet: the safety-net window of a Reconciled resource ended.
	CauseSafetyNet RoundCause = "safety-net"
	// CauseOperator: an adapter registration or option change, or a
	// removal notice.
	CauseOperator RoundCause = "operator"
)
