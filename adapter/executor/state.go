package executor

import (
	"time"

	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
)

// StepError is one failure: where and why.
type StepError struct {
	Phase   phase.Name `json:"phase"`
	Step    string     `json:"step"`
	Message string     `json:"message"`
}

// Meta is the adapter.* context every post expression can read.
type Meta struct {
	ExecutionStatus  phase.ExecutionStatus `json:"executionStatus"`
	ResourcesSkipped bool                  `json:"resourcesSkipped"`
	SkipReason       string                `json:"skipReason,omitempty"`
	ExecutionError   *StepError            `json:"executionError,omitempty"`
	ResourceErrors   map[string]StepError  `json:"resourceErrors,omitempty"`
}

// fail records a failure; the first one is the executionError.
func (m *Meta) fail(e StepError) {
	m.ExecutionStatus = phase.ExecutionFailed
	if m.ExecutionError == nil {
		m.ExecutionError = &e
	}
}

// skip records that preconditions were not met.
func (m *Meta) skip(reason string) {
	m.ResourcesSkipped = true
	m.SkipReason = reason
}

// State is everything one run knows, carried from phase to phase.
type State struct {
	// Event is the reconcile request the run acts on.
	Event resource.Event `json:"-"`
	// EventView is the event as params read it (event.id,
	// event.owner_references.id, ...) and the dry-run trace shows it: its
	// JSON form, built once when the run starts.
	EventView map[string]any `json:"event"`
	// Vars holds params, captures and precondition responses by name.
	Vars map[string]any `json:"vars"`
	Meta Meta           `json:"adapter"`
	// Resources holds the discovered objects by resource name; a resource
	// that does not exist is absent.
	Resources map[string]any `json:"resources"`
	// Gone is set when the API answered 404 for the resource itself: the
	// run ends cleanly and nothing is reported.
	Gone bool `json:"gone,omitempty"`
	// Trace records what each phase did.
	Trace Trace `json:"trace"`
	// RecheckAt is the earliest time a time-based precondition evaluated
	// in this run (stableFor, conditionAge, now()) gives another answer,
	// when that is within RecheckHorizon: the workflow runs the adapter
	// again then, whatever its other timers say.
	RecheckAt time.Time `json:"recheck_at,omitzero"`
}

// RecheckHorizon is how far ahead a time-based precondition's next change
// is looked for: beyond any stability window.
const RecheckHorizon = 30 * 24 * time.Hour

// recheck notes a time at which a precondition's answer changes.
func (s *State) recheck(at time.Time) {
	if s.RecheckAt.IsZero() || at.Before(s.RecheckAt) {
		s.RecheckAt = at
	}
}

// newState starts a run for an event.
func newState(ev resource.Event) *State {
	return &State{
		Event:     ev,
		EventView: eventView(ev),
		Vars:      map[string]any{},
		Meta:      Meta{ExecutionStatus: phase.ExecutionSucceeded},
		Resources: map[string]any{},
	}
}

// eventView is the event's JSON form as the engine decodes any JSON
// (integers int64), so event.generation reads as the number it is.
func eventView(ev resource.Event) map[string]any {
	m := map[string]any{"id": ev.ID, "kind": ev.Kind, "href": ev.Href, "generation": ev.Generation}
	if o := ev.OwnerReferences; o != nil {
		m["owner_references"] = map[string]any{"kind": o.Kind, "id": o.ID, "href": o.Href}
	}
	return m
}

// adapterView is adapter.* as CEL and templates see it.
func (s *State) adapterView(name, version string) map[string]any {
	m := map[string]any{
		"name":             name,
		"version":          version,
		"executionStatus":  s.Meta.ExecutionStatus,
		"resourcesSkipped": s.Meta.ResourcesSkipped,
	}
	if s.Meta.ResourcesSkipped {
		m["skipReason"] = s.Meta.SkipReason
	}
	if e := s.Meta.ExecutionError; e != nil {
		m["executionError"] = map[string]any{"phase": e.Phase, "step": e.Step, "message": e.Message}
		// Aliases some upstream configs read.
		m["errorReason"] = "ExecutionFailed:" + e.Phase
		m["errorMessage"] = e.Message
	}
	if len(s.Meta.ResourceErrors) > 0 {
		re := map[string]any{}
		for k, e := range s.Meta.ResourceErrors {
			re[k] = map[string]any{"phase": e.Phase, "step": e.Step, "message": e.Message}
		}
		m["resourceErrors"] = re
	}
	return m
}

// celVars is what expressions see: every variable, adapter and resources.
func (s *State) celVars(name, version string) map[string]any {
	out := make(map[string]any, len(s.Vars)+2)
	for k, v := range s.Vars {
		out[k] = v
	}
	out["adapter"] = s.adapterView(name, version)
	out["resources"] = s.Resources
	return out
}
