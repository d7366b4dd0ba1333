// Package conditionrules evaluates the per-kind condition rules of a kinds
// file: CEL expressions over a resource's adapter statuses that add a
// condition of the operator's own (LandingZoneReady from one adapter's
// NamespaceReady, say). Rules are compiled once, at start-up; evaluation is
// a pure function of the statuses, bounded by a cost limit and cancelled
// with the request, so the lifecycle can run it inside the row-locked
// aggregation and hand the outcomes to package aggregation.
package conditionrules

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"

	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Reasons of a rule's condition when the rule declares none.
const (
	ReasonSatisfied    = "RuleSatisfied"
	ReasonNotSatisfied = "RuleNotSatisfied"
	ReasonRuleError    = "RuleError"
)

// Set holds the compiled rules of every kind.
type Set struct {
	byKind map[string][]compiled
}

type compiled struct {
	rule resource.ConditionRule
	prg  cel.Program
}

// Compile checks and compiles the condition rules of a kinds table. file
// names the kinds file in errors ("" when there is none). A rule must
// compile and yield a bool.
func Compile(file string, kinds *resource.Kinds) (*Set, error) {
	env, err := newEnv()
	if err != nil {
		return nil, err
	}
	s := &Set{byKind: map[string][]compiled{}}
	for _, k := range kinds.All() {
		for _, r := range k.Conditions {
			fail := func(msg string) error {
				return &resource.KindError{File: file, Line: r.Line, Msg: fmt.Sprintf("condition %s of kind %s: %s", r.Type, k.Kind, msg),
					Fix: "write a CEL expression over statuses (a list of {adapter, observed_generation, conditions: [{type, status, reason, message}], data, metadata}) and generation that yields a bool"}
			}
			ast, iss := env.Compile(r.Expression)
			if iss.Err() != nil {
				return nil, fail(iss.Err().Error())
			}
			if out := ast.OutputType(); out != cel.BoolType && out != cel.DynType {
				return nil, fail("the expression yields " + out.String() + ", not bool")
			}
			prg, err := env.Program(ast, cel.CustomDecoratorV2(meterOperations), cel.InterruptCheckFrequency(interruptEvery))
			if err != nil {
				return nil, fail(err.Error())
			}
			s.byKind[k.Kind] = append(s.byKind[k.Kind], compiled{rule: r, prg: prg})
		}
	}
	return s, nil
}

// newEnv is the CEL environment rules are written in.
func newEnv() (*cel.Env, error) {
	env, err := cel.NewEnv(
		cel.OptionalTypes(),
		ext.Strings(),
		// A range longer than the cost limit allows would only be built
		// to be refused.
		ext.Lists(ext.ListsMaxRangeSize(MaxCost)),
		cel.Variable("statuses", cel.ListType(cel.DynType)),
		cel.Variable("generation", cel.IntType),
	)
	if err != nil {
		return nil, fmt.Errorf("condition rules: cel environment: %w", err)
	}
	return env, nil
}

// Evaluate runs the rules of a kind against a resource's statuses (the
// caller passes those of registered adapters only). A rule that fails at
// run time (a missing field, a non-bool result, more than MaxCost) makes
// its condition False with reason RuleError: a report an adapter sent must
// never fail the request that aggregates it. The error is ctx's when the
// request ended during an evaluation: its transaction is abandoned anyway.
func (s *Set) Evaluate(ctx context.Context, kind string, generation int64, statuses []resource.AdapterStatus) ([]aggregation.RuleOutcome, error) {
	return s.evaluate(ctx, kind, generation, statuses, MaxCost)
}

func (s *Set) evaluate(ctx context.Context, kind string, generation int64, statuses []resource.AdapterStatus, limit uint64) ([]aggregation.RuleOutcome, error) {
	if s == nil || len(s.byKind[kind]) == 0 {
		return nil, nil
	}
	vars := map[string]any{"statuses": statusValues(statuses), "generation": generation}
	out := make([]aggregation.RuleOutcome, 0, len(s.byKind[kind]))
	for _, c := range s.byKind[kind] {
		o := aggregation.RuleOutcome{Type: c.rule.Type, Status: resource.StatusFalse, Reason: ReasonNotSatisfied, Message: c.rule.Message}
		val, exceeded, err := run(ctx, c.prg, vars, limit)
		if ctx.Err() != nil && !exceeded {
			return nil, fmt.Errorf("evaluate condition %s of %s: %w", c.rule.Type, kind, context.Cause(ctx))
		}
		ok, isBool := any(nil), false
		if err == nil {
			ok = val.Value()
			_, isBool = ok.(bool)
		}
		switch {
		case exceeded:
			o.Reason, o.Message = ReasonRuleError, costError(limit)
		case err != nil:
			o.Reason, o.Message = ReasonRuleError, "the rule could not be evaluated: "+err.Error()
		case !isBool:
			o.Reason, o.Message = ReasonRuleError, fmt.Sprintf("the rule yielded %v, not a bool", ok)
		case ok == true:
			o.Status, o.Reason = resource.StatusTrue, ReasonSatisfied
			if c.rule.Reason != "" {
				o.Reason = c.rule.Reason
			}
		}
		if o.Message == "" {
			o.Message = fmt.Sprintf("%s: %s", o.Reason, c.rule.Expression)
		}
		out = append(out, o)
	}
	return out, nil
}

// run evaluates one program under a meter of its own; exceeded reports
// that the cost limit ended it.
func run(ctx context.Context, prg cel.Program, vars map[string]any, limit uint64) (ref.Val, bool, error) {
	evalCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m := &meter{limit: limit, cancel: cancel}
	val, _, err := prg.ContextEval(evalCtx, &activation{vars: vars, meter: m})
	if m.exceeded() {
		return nil, true, errCostLimit
	}
	if err == nil && val == nil {
		err = errors.New("the rule yielded no value")
	}
	return val, false, err
}

// statusValues turns reports into the plain values CEL sees, with the JSON
// field names adapters and operators know.
func statusValues(statuses []resource.AdapterStatus) []any {
	out := make([]any, 0, len(statuses))
	for _, st := range statuses {
		conds := make([]any, 0, len(st.Conditions))
		for _, c := range st.Conditions {
			conds = append(conds, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message})
		}
		out = append(out, map[string]any{
			"adapter": st.Adapter, "observed_generation": st.ObservedGeneration, "conditions": conds,
			"data": jsonValue(st.Data), "metadata": jsonValue(st.Metadata),
		})
	}
	return out
}

// jsonValue decodes stored report data for CEL; absent or undecodable data
// is null (the API stored it as valid JSON, so the latter does not occur).
func jsonValue(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		return nil
	}
	return v
}
