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
	"encoding/json"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/hyperfleet/hyperfleet/resource"
)

// Metrics the workflow records through its metrics handler (the worker
// exports them to Prometheus; timers become histograms in seconds with
// "_seconds" appended), tagged with the resource kind.
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

	// The three phase activities of protocol 1 (ProtocolPhases). Workers
	// keep hosting them so workflows started before protocol 2 finish their
	// current round; such workflows move to protocol 2 at their next wait.
	ActivityPrepare = "AdapterPrepare"
	ActivityApply   = "AdapterApply"
	ActivityReport  = "AdapterReport"
)

// Protocols of the workflow, carried in its input so a replay always takes
// the path it ran with.
const (
	// ProtocolPhases (the zero value, workflows started before protocol 2):
	// three activities per adapter, a read-back activity, and the same
	// backoff after every round that did not reconcile.
	ProtocolPhases = 0
	// ProtocolEventDriven: one activity per adapter, a local read-back, a
	// round that made progress followed at once by the adapters not done,
	// rounds woken by changes to the objects adapters manage, and jittered
	// self-healing rounds.
	ProtocolEventDriven = 2
	// ProtocolStartAttributes: protocol 2, with the search attributes
	// written only from the read-back, and only when they changed: they
	// say what the API said at the last reading (the generation, and
	// whether it was reconciled). The values a run was started (or
	// continued) with count as written. Protocol 2 also wrote them when a
	// round started, which repeated the start's values on a create and,
	// on a generation bump, briefly claimed the new generation reconciled.
	// Each write is a history event, a billable action and a visibility
	// update. Upgrade workers before the API that starts workflows with it:
	// a worker that does not know it would run protocol 2. Runs of protocol
	// 2 keep it across continue-as-new.
	ProtocolStartAttributes = 3
	// ProtocolWatchedBackoff: protocol 3, where a round that waits only on
	// watched objects always backs off longer (see waitsOnWatches).
	// Protocol 3 runs record that choice with workflow.GetVersion, which
	// writes a marker and a TemporalChangeVersion search attribute: a
	// history event and a visibility update in nearly every new workflow.
	// Here the input says it, so nothing is recorded. Runs keep their
	// protocol across continue-as-new.
	ProtocolWatchedBackoff = 4
	// ProtocolCurrent is the protocol the API starts workflows with.
	ProtocolCurrent = ProtocolWatchedBackoff
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
)

// StartAttributes are the search attributes a resource's workflow is
// started with. Protocol 3 takes them as written, so the relay and the
// workflow must agree on them: both use this.
func StartAttributes(ref Ref, generation int64) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(AttrKind.ValueSet(ref.Kind), AttrResourceID.ValueSet(ref.ID),
		AttrGeneration.ValueSet(generation), AttrReconciled.ValueSet(false))
}

// SearchAttributes lists the custom search attributes to register on the
// namespace.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		AttrKind.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrResourceID.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrGeneration.GetName(): enumspb.INDEXED_VALUE_TYPE_INT,
		AttrReconciled.GetName(): enumspb.INDEXED_VALUE_TYPE_BOOL,
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
	// StabilityWindow is the wait before re-running a Reconciled resource,
	// so adapters can self-heal (default 30m).
	StabilityWindow time.Duration `json:"stability_window"`
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

// Input starts (or continues) a workflow.
type Input struct {
	Ref        Ref      `json:"ref"`
	Generation int64    `json:"generation"`
	Adapters   []string `json:"adapters"`
	Options    Options  `json:"options"`
	// Protocol selects the workflow's behaviour (ProtocolPhases when
	// absent: histories recorded before protocol 2 replay unchanged).
	Protocol int `json:"protocol,omitempty"`
	// Carry is the state handed over by continue-as-new.
	Carry *Carry `json:"carry,omitempty"`
}

// Signal tells a running workflow that its resource changed. The relay
// sends its current adapter list and options with every signal, so a
// registration or configuration change reaches running workflows.
type Signal struct {
	Generation int64  `json:"generation"`
	Reason     string `json:"reason,omitempty"`
	// Adapters, when not null, replaces the workflow's adapter list.
	Adapters []string `json:"adapters"`
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

// Signal reasons. The API's outbox reasons (created, updated, deleting) ask
// for the new generation; the ones below wake the workflow without a bump.
const (
	// ReasonRemoved: the resource was removed from the API; the workflow
	// checks and completes instead of waiting out its timer.
	ReasonRemoved = "removed"
	// ReasonChildRemoved: one of a cluster's node pools was removed; a
	// deleting cluster can go on without waiting for its backoff.
	ReasonChildRemoved = "child-removed"
	// ReasonResync: the relay (re)started and makes sure a workflow runs.
	ReasonResync = "resync"
	// ReasonObjectChanged: an object an adapter manages changed status, was
	// modified or was deleted behind its back (protocol 2).
	ReasonObjectChanged = "object-changed"
)

// Carry is what survives continue-as-new.
type Carry struct {
	Round      int64                  `json:"round"`
	Failures   int                    `json:"failures"`
	Reconciled bool                   `json:"reconciled"`
	Adapters   map[string]AdapterView `json:"adapters"`
	// Wake and CheckFirst carry a pending request for a round (and a
	// removal check) made by a signal just before continue-as-new.
	Wake       bool `json:"wake,omitempty"`
	CheckFirst bool `json:"check_first,omitempty"`
	// Pending lists the adapters the pending round runs. Protocol 2 always
	// writes it (an empty list means none pending); its absence marks a
	// carry from protocol 1, whose next run starts with every adapter. All
	// asks for every adapter.
	Pending []string `json:"pending"`
	All     bool     `json:"all,omitempty"`
	// Settled and Deleting are the last read-back (protocol 2).
	Settled   []string `json:"settled,omitempty"`
	SettledAt int64    `json:"settled_at,omitempty"`
	Deleting  bool     `json:"deleting,omitempty"`
	// Seen is, per adapter, what its last run saw of its objects.
	Seen map[string]map[string]string `json:"seen,omitempty"`
}

// RunInput is what an adapter run acts on.
type RunInput struct {
	Event resource.Event `json:"event"`
}

// RunResult is what one adapter run did: where it ended, and each phase's
// outcome and duration, so the Temporal UI shows which phase failed and
// why without reading worker logs.
type RunResult struct {
	Summary Summary       `json:"summary"`
	Phases  []PhaseReport `json:"phases"`
	// Resources lists what the resources phase did to each one, e.g.
	// "testJob=create".
	Resources []string `json:"resources,omitempty"`
	// Seen maps each object the run discovered ("Job ns/name") to its
	// digest (transport.Digest): the state the adapter reported on.
	Seen map[string]string `json:"seen,omitempty"`
	// Watched says the adapter's worker watches every object the adapter
	// applies (each resource's transport watches and stamps the labels its
	// watch selects): their changes of readiness wake the workflow, so a
	// round that waits only on them backs off longer (watchedBackoff).
	Watched bool `json:"watched,omitempty"`
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
	Phase      string `json:"phase"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// PrepareInput is the first phase's input.
type PrepareInput struct {
	Event resource.Event `json:"event"`
}

// PhaseInput is the input of the apply and report phases: the state the
// phase before returned. A struct, so a field can be added without
// changing the activities' signatures.
type PhaseInput struct {
	State json.RawMessage `json:"state"`
}

// UnmarshalJSON also reads the bare state that workflows scheduled before
// PhaseInput existed, so an activity scheduled across an upgrade runs.
func (in *PhaseInput) UnmarshalJSON(b []byte) error {
	if !json.Valid(b) {
		return fmt.Errorf("phase input is not JSON")
	}
	// Anything else is handed on as the state, for the activity to refuse
	// with a message that names it.
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) == nil {
		if st, ok := fields["state"]; ok && len(fields) == 1 {
			in.State = st
			return nil
		}
	}
	in.State = append(json.RawMessage(nil), b...)
	return nil
}

// PhaseResult is each phase's output: the engine's state, opaque to the
// workflow, and what the workflow needs to decide.
type PhaseResult struct {
	State   json.RawMessage `json:"state"`
	Summary Summary         `json:"summary"`
}

// Summary describes where a run stands.
type Summary struct {
	ExecutionStatus  ExecutionStatus `json:"execution_status"`
	ResourcesSkipped bool            `json:"resources_skipped"`
	SkipReason       string          `json:"skip_reason,omitempty"`
	Gone             bool            `json:"gone,omitempty"`
	ErrorPhase       string          `json:"error_phase,omitempty"`
	Error            string          `json:"error,omitempty"`
	Reported         bool            `json:"reported,omitempty"`
	// Applied is set by Prepare when it already ran the resources phase
	// (an adapter without resources): the workflow skips Apply.
	Applied bool `json:"applied,omitempty"`
}

// Proceed reports whether later phases have anything to do.
func (s Summary) Proceed() bool {
	return !s.Gone && !s.ResourcesSkipped && s.ExecutionStatus != ExecutionFailed
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
}

// Outcome is how an adapter's run in a round ended, as the workflow's
// state query shows it.
type Outcome string

// Adapter outcomes.
const (
	OutcomeSuccess    Outcome = "success"
	OutcomeSkipped    Outcome = "skipped"
	OutcomeFailed     Outcome = "failed"
	OutcomeGone       Outcome = "gone"
	OutcomeSuperseded Outcome = "superseded"
	OutcomeError      Outcome = "error"
)

// ExecutionStatus is how an adapter run ended as its activity reports it
// (the engine's execution status, in the same words).
type ExecutionStatus string

// Execution statuses.
const (
	ExecutionSucceeded ExecutionStatus = "success"
	ExecutionFailed    ExecutionStatus = "failed"
)

// View is the workflow's answer to the "state" query.
type View struct {
	Ref        Ref                    `json:"ref"`
	Generation int64                  `json:"generation"`
	Target     int64                  `json:"target"`
	Round      int64                  `json:"round"`
	Phase      string                 `json:"phase"`
	Reconciled bool                   `json:"reconciled"`
	Reason     string                 `json:"reason,omitempty"`
	NextRound  time.Time              `json:"next_round,omitempty"`
	Adapters   map[string]AdapterView `json:"adapters"`
}

// Workflow phases reported by the query.
const (
	PhaseRunning  = "running"
	PhaseBackoff  = "backoff"
	PhaseStable   = "stable"
	PhaseFinished = "finished"
)
