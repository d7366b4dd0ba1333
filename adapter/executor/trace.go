package executor

import (
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/phase"
)

// Trace is a record of what a run did, phase by phase: the dry-run output
// (text and JSON), and the detail behind log lines and Temporal results.
// Its JSON form is a documented, stable schema (docs/adapter-authoring.md).
type Trace struct {
	Params        PhaseTrace[ParamStep]        `json:"params"`
	Preconditions PhaseTrace[PreconditionStep] `json:"preconditions"`
	Resources     PhaseTrace[ResourceStep]     `json:"resources"`
	Post          PostTrace                    `json:"post"`
}

// PhaseTrace is one phase: its outcome and steps.
type PhaseTrace[S any] struct {
	Outcome phase.Outcome `json:"outcome"`
	Reason  string        `json:"reason,omitempty"`
	Steps   []S           `json:"steps"`
}

// ParamStep is one resolved param.
type ParamStep struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Value   any    `json:"value"`
	Call    *Call  `json:"api_call,omitempty"`
	Warning string `json:"warning,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Call is one HTTP exchange.
type Call struct {
	Method       string `json:"method"`
	URL          string `json:"url"`
	StatusCode   int    `json:"status_code"`
	Attempts     int    `json:"attempts"`
	RequestBody  any    `json:"request_body,omitempty"`
	ResponseBody any    `json:"response_body,omitempty"`
	Error        string `json:"error,omitempty"`
}

// StepOutcome is how one precondition ended.
type StepOutcome string

// Precondition step outcomes.
const (
	StepPass    StepOutcome = "PASS"
	StepFail    StepOutcome = "FAIL"
	StepErrored StepOutcome = "ERROR"
)

// PreconditionStep is one precondition.
type PreconditionStep struct {
	Name       string          `json:"name"`
	Outcome    StepOutcome     `json:"outcome"`
	Call       *Call           `json:"api_call,omitempty"`
	Captures   []Captured      `json:"captures,omitempty"`
	Conditions []ConditionEval `json:"conditions,omitempty"`
	Expression *ExprEval       `json:"expression,omitempty"`
	Message    string          `json:"message,omitempty"`
}

// Captured is one captured variable.
type Captured struct {
	Name    string `json:"name"`
	Value   any    `json:"value"`
	Warning string `json:"warning,omitempty"`
}

// ConditionEval is one structured condition and its result.
type ConditionEval struct {
	Field    string              `json:"field"`
	Operator taskconfig.Operator `json:"operator"`
	Value    any                 `json:"value,omitempty"`
	Actual   any                 `json:"actual"`
	Result   bool                `json:"result"`
}

// ExprEval is a CEL check and its result.
type ExprEval struct {
	Expression string `json:"expression"`
	Result     any    `json:"result"`
}

// Operation is what the resources phase did to one resource.
type Operation string

// Resource operations.
const (
	OpCreate      Operation = "CREATE"
	OpUpdate      Operation = "UPDATE"
	OpSkip        Operation = "SKIP"
	OpRecreate    Operation = "RECREATE"
	OpDelete      Operation = "DELETE"
	OpCreateGated Operation = "CREATE_GATED"
	OpAbsent      Operation = "ABSENT"
	OpError       Operation = "ERROR"
)

// ResourceStep is one resource.
type ResourceStep struct {
	Name      string    `json:"name"`
	Operation Operation `json:"operation"`
	Transport string    `json:"transport"`
	Target    string    `json:"target,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	Object    string    `json:"object_name,omitempty"`
	// Manifest is the rendered manifest (verbose dry-run output).
	Manifest   map[string]any `json:"manifest,omitempty"`
	Discovered bool           `json:"discovered"`
	Message    string         `json:"message,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// PostTrace is the post phase: payloads, then actions.
type PostTrace struct {
	Outcome  phase.Outcome `json:"outcome"`
	Payloads []PayloadStep `json:"payloads"`
	Actions  []ActionStep  `json:"actions"`
}

// PayloadStep is one payload.
type PayloadStep struct {
	Name    string         `json:"name"`
	Built   bool           `json:"built"`
	Payload map[string]any `json:"payload,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// ActionOutcome is how one post action ended.
type ActionOutcome string

// Post action outcomes.
const (
	ActionExecuted ActionOutcome = "EXECUTED"
	ActionSkipped  ActionOutcome = "SKIPPED"
	ActionFailed   ActionOutcome = "FAILED"
)

// ActionStep is one post action.
type ActionStep struct {
	Name    string        `json:"name"`
	Outcome ActionOutcome `json:"outcome"`
	Call    *Call         `json:"api_call,omitempty"`
	Message string        `json:"message,omitempty"`
}
