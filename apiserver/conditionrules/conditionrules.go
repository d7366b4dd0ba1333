// Package conditionrules evaluates the per-kind condition rules of a kinds
// file: CEL expressions over a resource's adapter statuses that add a
// condition of the operator's own (LandingZoneReady from one adapter's
// NamespaceReady, say). Rules are compiled once, at start-up; evaluation is
// a pure function of the statuses, so the lifecycle can run it inside the
// row-locked aggregation and hand the outcomes to package aggregation.
package conditionrules

import (
	"fmt"

	"github.com/google/cel-go/cel"
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

// maxCost bounds one evaluation: statuses are bounded (64 adapters, 32
// conditions each), and a rule that would still run away fails instead.
const maxCost = 1_000_000

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
	env, err := cel.NewEnv(
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		cel.Variable("statuses", cel.ListType(cel.DynType)),
		cel.Variable("generation", cel.IntType),
	)
	if err != nil {
		return nil, fmt.Errorf("condition rules: cel environment: %w", err)
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
			prg, err := env.Program(ast, cel.CostLimit(maxCost))
			if err != nil {
				return nil, fail(err.Error())
			}
			s.byKind[k.Kind] = append(s.byKind[k.Kind], compiled{rule: r, prg: prg})
		}
	}
	return s, nil
}

// Evaluate runs the rules of a kind against a resource's stored statuses.
// A rule that fails at run time (a missing field, a non-bool result) makes
// its condition False with reason RuleError: a report an adapter sent must
// never fail the request that aggregates it.
func (s *Set) Evaluate(kind string, generation int64, statuses []resource.AdapterStatus) []aggregation.RuleOutcome {
	if s == nil || len(s.byKind[kind]) == 0 {
		return nil
	}
	vars := map[string]any{"statuses": statusValues(statuses), "generation": generation}
	out := make([]aggregation.RuleOutcome, 0, len(s.byKind[kind]))
	for _, c := range s.byKind[kind] {
		o := aggregation.RuleOutcome{Type: c.rule.Type, Status: resource.StatusFalse, Reason: ReasonNotSatisfied, Message: c.rule.Message}
		val, _, err := c.prg.Eval(vars)
		ok, isBool := any(nil), false
		if err == nil {
			ok = val.Value()
			_, isBool = ok.(bool)
		}
		switch {
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
	return out
}

// statusValues turns reports into the plain values CEL sees, with the JSON
// field names adapters and operators know.
func statusValues(statuses []resource.AdapterStatus) []any {
	out := make([]any, 0, len(statuses))
	for _, st := range statuses {
		conds := make([]any, 0, len(st.Conditions))
		for _, c := range st.Conditions {
			conds = append(conds, map[string]any{"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message})
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
