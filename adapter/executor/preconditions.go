package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/expr"
	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/phase"
)

// preconditions runs the checks in order. An error fails the run; the first
// check not met skips the resources (post still runs).
func (e *Engine) preconditions(ctx context.Context, st *State) {
	tr := &st.Trace.Preconditions
	tr.Outcome = phase.Success
	for i := range e.task.Preconditions {
		pc := &e.task.Preconditions[i]
		step, met, err := e.precondition(ctx, st, pc)
		tr.Steps = append(tr.Steps, step)
		switch {
		case errors.Is(err, errGone):
			e.gone(st, step.Call)
			tr.Outcome, tr.Reason = phase.Skipped, st.Meta.SkipReason
			return
		case err != nil:
			st.Meta.fail(StepError{Phase: phase.Preconditions, Step: pc.Name, Message: err.Error()})
			tr.Outcome, tr.Reason = phase.Failed, err.Error()
			return
		case !met:
			reason := fmt.Sprintf("precondition %q not met: %s", pc.Name, step.Message)
			st.Meta.skip(reason)
			tr.Outcome, tr.Reason = phase.NotMet, reason
			return
		}
	}
}

func (e *Engine) precondition(ctx context.Context, st *State, pc *taskconfig.Precondition) (PreconditionStep, bool, error) {
	step := PreconditionStep{Name: pc.Name, Outcome: StepPass}
	fail := func(err error) (PreconditionStep, bool, error) {
		step.Outcome, step.Message = StepErrored, err.Error()
		return step, false, err
	}
	if pc.APICall != nil {
		body, call, err := e.callAPI(ctx, st, pc.APICall, nil)
		step.Call = call
		if err != nil {
			return fail(err)
		}
		st.Vars[pc.Name] = body
		for j := range pc.Capture {
			c := &pc.Capture[j]
			captured, err := e.capture(ctx, pc.Name, body, c)
			if err != nil {
				return fail(fmt.Errorf("capture %s: %w", c.Name, err))
			}
			step.Captures = append(step.Captures, captured)
			st.Vars[c.Name] = captured.Value
		}
	}
	met := true
	var why []string
	for _, c := range pc.Conditions {
		actual, found, err := lookup(st.Vars, c.Field)
		if err != nil {
			return fail(fmt.Errorf("condition on %s: %w", c.Field, err))
		}
		ok, err := Check(c.Operator, actual, found, taskconfig.NormalizedCopy(c.Value))
		if err != nil {
			return fail(fmt.Errorf("condition on %s: %w", c.Field, err))
		}
		step.Conditions = append(step.Conditions, ConditionEval{Field: c.Field, Operator: c.Operator, Value: c.Value, Actual: actual, Result: ok})
		if !ok {
			met = false
			why = append(why, describeCondition(c, actual, found))
		}
	}
	if met && pc.Expression != "" {
		vars := st.celVars(e.name, e.version)
		prog, err := e.cel.Compile(pc.Expression, e.declared)
		if err != nil {
			return fail(err)
		}
		v, err := prog.Eval(ctx, vars)
		if err != nil {
			return fail(err)
		}
		e.noteRecheck(ctx, st, prog, vars)
		step.Expression = &ExprEval{Expression: strings.TrimSpace(pc.Expression), Result: v}
		b, ok := v.(bool)
		if !ok {
			return fail(fmt.Errorf("expression must yield true or false, got %v", v))
		}
		if !b {
			met = false
			why = append(why, fmt.Sprintf("expression %q is false", oneLine(pc.Expression)))
		}
	}
	if !met {
		step.Outcome, step.Message = StepFail, strings.Join(why, "; ")
	}
	return step, met, nil
}

// noteRecheck records when the expression's answer changes with time
// alone (a stableFor that turns true), so the round is repeated then and
// not at the next safety-net round.
func (e *Engine) noteRecheck(ctx context.Context, st *State, prog *expr.Program, vars map[string]any) {
	if at, ok := prog.NextChange(ctx, vars, e.opts.Now(), RecheckHorizon); ok {
		st.recheck(at)
	}
}

// capture extracts one value from a response. A field that is absent takes
// the default (or null); a CEL capture sees the response's top-level fields
// and the whole response under the precondition's name.
func (e *Engine) capture(ctx context.Context, precondition string, body any, c *taskconfig.Capture) (Captured, error) {
	out := Captured{Name: c.Name}
	if c.Field != "" {
		v, found, err := fieldpath.Get(body, c.Field)
		if err != nil {
			return out, err
		}
		if !found || v == nil {
			v = taskconfig.NormalizedCopy(c.Default)
			if c.Default == nil {
				out.Warning = fmt.Sprintf("field %s not in the response; set a default or use expression with has() to silence this", c.Field)
			}
		}
		out.Value = v
		return out, nil
	}
	vars := map[string]any{precondition: body}
	if m, ok := body.(map[string]any); ok {
		for k, v := range m {
			if k != precondition {
				vars[k] = v
			}
		}
	}
	p, err := e.cel.CompileOpen(c.Expression, []string{precondition})
	if err != nil {
		return out, err
	}
	v, err := p.Eval(ctx, vars)
	if err != nil {
		if c.Default != nil {
			out.Value, out.Warning = taskconfig.NormalizedCopy(c.Default), err.Error()+"; using the default"
			return out, nil
		}
		return out, err
	}
	out.Value = v
	return out, nil
}

// lookup reads a condition's field: a variable name, optionally followed by
// a path into it (clusterStatus.status.phase).
func lookup(vars map[string]any, field string) (any, bool, error) {
	return fieldpath.Get(vars, field)
}

func describeCondition(c taskconfig.Condition, actual any, found bool) string {
	got := fmt.Sprintf("%v", display(actual))
	if !found {
		got = "absent"
	}
	switch c.Operator {
	case taskconfig.OpExists, taskconfig.OpNotExists:
		return fmt.Sprintf("%s %s (it is %s)", c.Field, c.Operator, got)
	default: // every other operator compares with a value
		return fmt.Sprintf("%s %s %v (got %s)", c.Field, c.Operator, display(c.Value), got)
	}
}

func display(v any) any {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	if v == nil {
		return "null"
	}
	return v
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
