package conditionrules

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// MaxCost bounds the evaluation of one rule. Each operation (a function,
// an operator, a comprehension step) and each read of a variable or field
// costs 1, and a value read or built costs 1 more per list element, map
// entry or 10 bytes of text. Statuses are bounded (registered adapters,
// 32 conditions, the status data limit), so a rule over them needs a few
// thousand; one that iterates a report's data beyond this fails with
// RuleError in milliseconds instead of holding the resource's row lock.
const MaxCost = 100_000

// errCostLimit cancels an evaluation that went over its limit.
var errCostLimit = errors.New("the rule exceeded its cost limit")

// interruptEvery is how many comprehension steps run between two checks of
// the evaluation's context: cancelling it (the request ended, or the cost
// limit was reached) stops a loop within that many steps.
const interruptEvery = 100

// meterName is the activation entry through which the operations of one
// evaluation find its meter: not a valid CEL identifier, so no rule can
// name it.
const meterName = "@hyperfleet.meter"

// meter is the cost of one evaluation. cel-go's own runtime cost tracker
// (cel.CostLimit) is not used: it keeps a stack of values that grows with
// every step of a comprehension and searches it on every step, so its time
// is quadratic in the cost (a limit of 1,000,000 took minutes over a
// 200,000-item list); this one adds to a counter.
type meter struct {
	used, limit uint64
	cancel      context.CancelCauseFunc
}

// charge adds n and reports whether the evaluation is still within its
// limit; the first charge beyond it cancels the evaluation's context, which
// ends the comprehensions that are running.
func (m *meter) charge(n uint64) bool {
	if m.used > m.limit {
		return false
	}
	m.used += n
	if m.used <= m.limit {
		return true
	}
	if m.cancel != nil {
		m.cancel(errCostLimit)
	}
	return false
}

func (m *meter) exceeded() bool { return m.used > m.limit }

func (m *meter) overLimit() ref.Val {
	return types.NewErr("the rule exceeded its cost limit of %d", m.limit)
}

// activation holds one evaluation's variables and its meter.
type activation struct {
	vars  map[string]any
	meter *meter
}

func (a *activation) ResolveName(name string) (any, bool) {
	if name == meterName {
		return a.meter, true
	}
	v, ok := a.vars[name]
	return v, ok
}

func (a *activation) Parent() interpreter.Activation { return nil }

func meterOf(frame *interpreter.ExecutionFrame) *meter {
	v, _ := frame.ResolveName(meterName)
	m, _ := v.(*meter)
	return m
}

// size is the part of a value's cost that grows with it.
func size(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x)) / 10
	case types.Bytes:
		return uint64(len(x)) / 10
	case traits.Sizer:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 0
}

// meteredCall charges a function or operator call, and the size of what it
// returns unless that is a comprehension's list accumulator growing by one
// element (list addition appends in place; charging the whole list on every
// step would make map() and filter() quadratic in cost).
type meteredCall struct {
	interpreter.InterpretableCall
	sized bool
}

func (c *meteredCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	m := meterOf(frame)
	if m == nil {
		return c.InterpretableCall.Exec(frame)
	}
	if !m.charge(1) {
		return m.overLimit()
	}
	v := c.InterpretableCall.Exec(frame)
	if c.sized && !m.charge(size(v)) {
		return m.overLimit()
	}
	return v
}

func (c *meteredCall) Eval(a interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(a))
}

// meteredAttr charges a read of a variable or field, and the size of the
// value read when it comes from the statuses (not from a comprehension's
// accumulator, nor a conditional's branch, which is charged where it was
// read).
type meteredAttr struct {
	interpreter.InterpretableAttribute
	sized bool
}

func (a *meteredAttr) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	m := meterOf(frame)
	if m == nil {
		return a.InterpretableAttribute.Exec(frame)
	}
	if !m.charge(1) {
		return m.overLimit()
	}
	v := a.InterpretableAttribute.Exec(frame)
	if a.sized && !m.charge(size(v)) {
		return m.overLimit()
	}
	return v
}

func (a *meteredAttr) Eval(act interpreter.Activation) ref.Val {
	return a.Exec(interpreter.AsFrame(act))
}

// meterOperations wraps the calls and attribute reads of a program as it is
// planned. Wrappers keep the interfaces the planner and cel-go's own
// decorators look for (a select on an attribute extends that attribute);
// constants, comprehensions and the logical operators are left alone, so
// comprehensions stay interruptible, and every comprehension step runs at
// least one wrapped call or read.
func meterOperations(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	switch x := i.(type) {
	case *meteredCall, *meteredAttr:
		return i, nil
	case interpreter.InterpretableAttribute:
		return &meteredAttr{InterpretableAttribute: x, sized: readsStatuses(x.Attr())}, nil
	case interpreter.InterpretableCall:
		return &meteredCall{InterpretableCall: x, sized: x.OverloadID() != overloads.AddList}, nil
	}
	return i, nil
}

// readsStatuses tells a read rooted at a variable the rule names (statuses,
// generation, a comprehension's variable) from one of a comprehension's
// accumulator (@result, or __result__ in older macros) or any other
// attribute.
func readsStatuses(a interpreter.Attribute) bool {
	ns, ok := a.(interpreter.NamespacedAttribute)
	if !ok {
		return false
	}
	for _, name := range ns.CandidateVariableNames() {
		if name == "" || name[0] == '@' || name == "__result__" {
			return false
		}
	}
	return true
}

// costError says what a RuleError from the cost limit means for the
// operator who wrote the rule.
func costError(limit uint64) string {
	return fmt.Sprintf("the rule could not be evaluated: it exceeded the cost limit of %d "+
		"(an operation or field read costs 1, plus 1 per list element, map entry or 10 bytes of text it reads or builds); "+
		"iterate less of the reports' data", limit)
}
