// Package expr is the CEL environment of adapter task configs: optional
// types (?.  orValue hasValue), has(), the standard macros, the strings,
// lists, sets and math extensions, timestamp and duration arithmetic, and
// the functions upstream HyperFleet configs use: now(), toJson, dig,
// conditionStatus, conditionAge, stableFor, statusFeedbackValue, triState.
//
// Expressions are compiled once per site and evaluated against plain Go
// values (maps, slices, strings, int64, float64, bool, nil); results come
// back as plain Go values, so they can be serialised as JSON.
package expr

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
)

// Engine compiles and caches CEL programs. It is safe for concurrent use.
type Engine struct {
	base  *cel.Env
	clock *celClock

	mu    sync.Mutex
	cache map[string]*Program

	// probe evaluates programs at other times than now (NextChange).
	probeOnce sync.Once
	probe     *probe
	probeErr  error
}

// maxCost bounds the work one evaluation may do, so a hostile expression
// (huge comprehensions) fails instead of hanging a worker.
const maxCost = 1_000_000

// New builds the environment; now is the clock behind now() and the time
// helpers (time.Now when nil).
func New(now func() time.Time) (*Engine, error) {
	if now == nil {
		now = time.Now
	}
	return newEngine(&celClock{now: now})
}

func newEngine(c *celClock) (*Engine, error) {
	e := &Engine{clock: c, cache: map[string]*Program{}}
	opts := []cel.EnvOption{
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
		ext.Math(),
		ext.Encoders(),
		cel.DefaultUTCTimeZone(true),
	}
	opts = append(opts, e.functions()...)
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	e.base = env
	return e, nil
}

// Well-known variables with a fixed type.
const (
	VarResources = "resources"
	VarAdapter   = "adapter"
)

// Program is a compiled expression.
type Program struct {
	src  string
	vars []string
	prg  cel.Program
	// in is the engine that compiled it; again compiles the same source
	// the same way on another engine (the probe).
	in    *Engine
	again func(*Engine) (*Program, error)
}

// Source returns the expression text.
func (p *Program) Source() string { return p.src }

// Error is a compile or evaluation failure with the expression's text.
type Error struct {
	Expr    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Compile type-checks src with the given variables in scope (all dynamic;
// "resources" and "adapter" are maps). A reference to anything else is a
// compile error, which is how validation catches typos.
func (e *Engine) Compile(src string, vars []string) (*Program, error) {
	key := "c\x00" + src + "\x00" + strings.Join(sortedUnique(vars), ",")
	if p := e.cached(key); p != nil {
		return p, nil
	}
	env, err := e.withVars(vars)
	if err != nil {
		return nil, err
	}
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, &Error{Expr: src, Message: cleanIssues(iss.Err().Error())}
	}
	return e.program(key, src, vars, env, checked, func(o *Engine) (*Program, error) { return o.Compile(src, vars) })
}

// CompileOpen compiles src declaring every free identifier it uses, for
// contexts whose variables are only known at run time (a capture expression
// sees the fields of an API response). Syntax and function misuse are still
// caught; undefined names surface at evaluation.
func (e *Engine) CompileOpen(src string, extra []string) (*Program, error) {
	key := "o\x00" + src + "\x00" + strings.Join(sortedUnique(extra), ",")
	if p := e.cached(key); p != nil {
		return p, nil
	}
	parsed, iss := e.base.Parse(src)
	if iss.Err() != nil {
		return nil, &Error{Expr: src, Message: cleanIssues(iss.Err().Error())}
	}
	vars := append(FreeIdentifiers(parsed.NativeRep().Expr()), extra...)
	env, err := e.withVars(vars)
	if err != nil {
		return nil, err
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		return nil, &Error{Expr: src, Message: cleanIssues(iss.Err().Error())}
	}
	return e.program(key, src, sortedUnique(vars), env, checked, func(o *Engine) (*Program, error) { return o.CompileOpen(src, extra) })
}

func (e *Engine) cached(key string) *Program {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cache[key]
}

func (e *Engine) program(key, src string, vars []string, env *cel.Env, checked *cel.Ast, again func(*Engine) (*Program, error)) (*Program, error) {
	prg, err := env.Program(checked, cel.CostLimit(maxCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, &Error{Expr: src, Message: err.Error()}
	}
	p := &Program{src: src, vars: sortedUnique(vars), prg: prg, in: e, again: again}
	e.mu.Lock()
	e.cache[key] = p
	e.mu.Unlock()
	return p, nil
}

func (e *Engine) withVars(vars []string) (*cel.Env, error) {
	var opts []cel.EnvOption
	for _, v := range sortedUnique(vars) {
		switch v {
		case VarResources, VarAdapter:
			opts = append(opts, cel.Variable(v, cel.MapType(cel.StringType, cel.DynType)))
		default:
			opts = append(opts, cel.Variable(v, cel.DynType))
		}
	}
	return e.base.Extend(opts...)
}

// Eval runs the program. Variables it declares but vars lacks are null.
func (p *Program) Eval(ctx context.Context, vars map[string]any) (result any, err error) {
	defer func() {
		// cel-go recovers internally, but a panic here must never take a worker down.
		if r := recover(); r != nil {
			result, err = nil, &Error{Expr: p.src, Message: fmt.Sprintf("evaluation failed: %v", r)}
		}
	}()
	act := make(map[string]any, len(p.vars))
	for _, name := range p.vars {
		v, ok := vars[name]
		switch {
		case !ok && (name == VarResources || name == VarAdapter):
			v = map[string]any{}
		case !ok:
			v = nil
		}
		act[name] = v
	}
	out, _, err := p.prg.ContextEval(ctx, act)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "interface conversion: *types.Err") {
			// A library function was handed an error value (cel-go reports
			// it as an internal error): almost always a missing field.
			msg = "a function received a value that failed to evaluate (often a missing field: use ?. with orValue())"
		}
		return nil, &Error{Expr: p.src, Message: msg}
	}
	return ToNative(out)
}

// EvalBool runs a program that must yield a boolean.
func (p *Program) EvalBool(ctx context.Context, vars map[string]any) (bool, error) {
	v, err := p.Eval(ctx, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, &Error{Expr: p.src, Message: fmt.Sprintf("expression must yield true or false, got %s", describe(v))}
	}
	return b, nil
}

// FreeIdentifiers lists the top-level names an expression reads, excluding
// comprehension variables (the c in list.filter(c, ...)).
func FreeIdentifiers(expr ast.Expr) []string {
	seen := map[string]bool{}
	var walk func(e ast.Expr, bound map[string]bool)
	walk = func(e ast.Expr, bound map[string]bool) {
		if e == nil {
			return
		}
		switch e.Kind() {
		case ast.IdentKind:
			if name := e.AsIdent(); !bound[name] {
				seen[name] = true
			}
		case ast.SelectKind:
			walk(e.AsSelect().Operand(), bound)
		case ast.CallKind:
			c := e.AsCall()
			walk(c.Target(), bound)
			for _, a := range c.Args() {
				walk(a, bound)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el, bound)
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				me := en.AsMapEntry()
				walk(me.Key(), bound)
				walk(me.Value(), bound)
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value(), bound)
			}
		case ast.ComprehensionKind:
			comp := e.AsComprehension()
			walk(comp.IterRange(), bound)
			inner := map[string]bool{comp.IterVar(): true, comp.AccuVar(): true}
			if comp.HasIterVar2() {
				inner[comp.IterVar2()] = true
			}
			for k := range bound {
				inner[k] = true
			}
			walk(comp.AccuInit(), bound)
			walk(comp.LoopCondition(), inner)
			walk(comp.LoopStep(), inner)
			walk(comp.Result(), inner)
		}
	}
	walk(expr, map[string]bool{})
	out := make([]string, 0, len(seen))
	for k := range seen {
		// Macro accumulators are internal names.
		if !strings.HasPrefix(k, "@") && k != "__result__" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// cleanIssues drops cel-go's "ERROR: <input>:" prefixes, keeping the
// line:column and the caret drawing that shows where the problem is.
func cleanIssues(s string) string {
	return strings.ReplaceAll(s, "ERROR: <input>:", "")
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	default:
		return fmt.Sprintf("%T %v", v, v)
	}
}
