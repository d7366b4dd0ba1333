package executor

import (
	"encoding/json"

	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
)

// ExecutionStatus is adapter.executionStatus: how a run ended.
type ExecutionStatus string

// Execution statuses.
const (
	StatusSuccess ExecutionStatus = "success"
	StatusFailed  ExecutionStatus = "failed"
)

// Phases named in adapter.executionError.phase.
const (
	PhaseParams        = "params"
	PhasePreconditions = "preconditions"
	PhaseResources     = "resources"
	PhasePost          = "post"
)

// StepError is one failure: where and why.
type StepError struct {
	Phase   string `json:"phase"`
	Step    string `json:"step"`
	Message string `json:"message"`
}

// Meta is the adapter.* context every post expression can read.
type Meta struct {
	ExecutionStatus  ExecutionStatus      `json:"executionStatus"`
	ResourcesSkipped bool                 `json:"resourcesSkipped"`
	SkipReason       string               `json:"skipReason,omitempty"`
	ExecutionError   *StepError           `json:"executionError,omitempty"`
	ResourceErrors   map[string]StepError `json:"resourceErrors,omitempty"`
}

// fail records a failure; the first one is the executionError.
func (m *Meta) fail(e StepError) {
	m.ExecutionStatus = StatusFailed
	if m.ExecutionError == nil {
		m.ExecutionError = &e
	}
}

// skip records that preconditions were not met.
func (m *Meta) skip(reason string) {
	m.ResourcesSkipped = true
	m.SkipReason = reason
}

// State is everything one run knows, carried from phase to phase. It is
// plain JSON so the phases can run as separate activities.
type State struct {
	// Event is the reconcile request ({id, kind, href, generation,
	// owner_references}).
	Event map[string]any `json:"event"`
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
}

// NewState starts a run for an event.
func NewState(event map[string]any) *State {
	return &State{
		Event:     event,
		Vars:      map[string]any{},
		Meta:      Meta{ExecutionStatus: StatusSuccess},
		Resources: map[string]any{},
	}
}

// UnmarshalJSON keeps integers as int64 through a JSON round trip (a
// Temporal payload), so observed_generation stays an integer.
func (s *State) UnmarshalJSON(data []byte) error {
	type plain State
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	p.Event, _ = jsonvalue.NormalizeInPlace(reNumber(p.Event)).(map[string]any)
	p.Vars, _ = jsonvalue.NormalizeInPlace(reNumber(p.Vars)).(map[string]any)
	p.Resources, _ = jsonvalue.NormalizeInPlace(reNumber(p.Resources)).(map[string]any)
	*s = State(p)
	return nil
}

// reNumber re-decodes a tree with json.Number so integers survive.
func reNumber(v map[string]any) any {
	if v == nil {
		return map[string]any{}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := jsonvalue.Decode(raw)
	if err != nil {
		return v
	}
	return out
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
