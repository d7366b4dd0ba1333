// Package phase is the vocabulary an adapter run is reported in, shared by
// the engine that runs it (adapter/executor), the activity that hosts it
// (activities) and the workflow that reads its result
// (workflows/reconcile): the phases, how each phase ended, and how the
// whole run ended. One type and one spelling per value, so a switch over
// them is checked for exhaustiveness and a value cannot be misspelled
// between layers.
package phase

// Name is one of the four phases of a run, in order.
type Name string

// The phases, as adapter.executionError.phase names them.
const (
	Params        Name = "params"
	Preconditions Name = "preconditions"
	Resources     Name = "resources"
	Post          Name = "post"
)

// Outcome is how a phase ended, as the dry-run trace and the activity's
// result show it.
type Outcome string

// Phase outcomes.
const (
	Success Outcome = "SUCCESS"
	Failed  Outcome = "FAILED"
	// Skipped: the phase had nothing to do (preconditions not met, or the
	// resource is gone).
	Skipped Outcome = "SKIPPED"
	// NotMet: a precondition was not met; the resources are skipped.
	NotMet Outcome = "NOT_MET"
)

// ExecutionStatus is how a whole run ended: adapter.executionStatus, which
// upstream task configs compare in CEL ("success", "failed").
type ExecutionStatus string

// Execution statuses.
const (
	ExecutionSucceeded ExecutionStatus = "success"
	ExecutionFailed    ExecutionStatus = "failed"
)
