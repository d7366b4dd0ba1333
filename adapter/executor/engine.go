// Package executor runs an adapter task config: params, preconditions,
// resources and post, exactly as the adapter authoring guide describes, with
// the adapter.* context the post expressions read. It has no Temporal
// dependency: dry-run and tests call it directly, and each phase is a
// function over a JSON-serialisable State so the reconcile workflow can run
// the phases as separate activities.
package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/expr"
	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/template"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
)

// Options wire an engine to the outside world.
type Options struct {
	// API calls the HyperFleet API.
	API *apiclient.Client
	// Transports by client name ("kubernetes", "maestro").
	Transports map[string]transport.Transport
	// Now is the clock of now() in CEL and templates (time.Now by default).
	Now func() time.Time
	// LookupEnv reads env.* params (os.LookupEnv by default).
	LookupEnv func(string) (string, bool)
	// ReadFile reads file params (os.ReadFile by default).
	ReadFile func(string) ([]byte, error)
	Logger   zerolog.Logger
	Metrics  *metrics.Metrics
	// RecreateTimeout bounds the wait for a deleted object to disappear
	// before recreating it (default 60s).
	RecreateTimeout time.Duration
}

// Engine runs one adapter.
type Engine struct {
	name, version string
	task          *taskconfig.TaskConfig
	refs          map[string]string
	opts          Options
	cel           *expr.Engine
	tpl           *template.Renderer
	// declared are the names every expression may read: every param,
	// capture and precondition response of the config, adapter and
	// resources. One not set in a run reads as null.
	declared []string
	// observeFirst is set when a lifecycle expression reads resources.*:
	// the resources phase then discovers every resource before acting.
	observeFirst bool
}

// New prepares an engine for a validated bundle.
func New(b *taskconfig.Bundle, opts Options) (*Engine, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	if opts.RecreateTimeout <= 0 {
		opts.RecreateTimeout = 60 * time.Second
	}
	if opts.Transports == nil {
		opts.Transports = map[string]transport.Transport{}
	}
	cel, err := expr.New(opts.Now)
	if err != nil {
		return nil, err
	}
	name := b.Adapter.Adapter.Name
	if name == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(baseName(b.TaskFile), ".yaml"), "-task-config")
	}
	return &Engine{
		name: name, version: b.Adapter.Adapter.Version, task: b.Task, refs: b.Refs,
		opts: opts, cel: cel, tpl: template.New(opts.Now), declared: declaredNames(b.Task),
		observeFirst: lifecycleReadsResources(b.Task),
	}, nil
}

func lifecycleReadsResources(t *taskconfig.TaskConfig) bool {
	for _, r := range t.Resources {
		if l := r.Lifecycle; l != nil {
			if l.Delete != nil && l.Delete.When != nil && strings.Contains(l.Delete.When.Expression, "resources") ||
				l.Create != nil && l.Create.When != nil && strings.Contains(l.Create.When.Expression, "resources") {
				return true
			}
		}
	}
	return false
}

func declaredNames(t *taskconfig.TaskConfig) []string {
	names := []string{expr.VarAdapter, expr.VarResources}
	for _, p := range t.Params {
		names = append(names, p.Name)
	}
	for _, pc := range t.Preconditions {
		if pc.APICall != nil {
			names = append(names, pc.Name)
		}
		for _, c := range pc.Capture {
			names = append(names, c.Name)
		}
	}
	return names
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Name is the adapter's name.
func (e *Engine) Name() string { return e.name }

// HasResources reports whether the resources phase has any work: an adapter
// without resources (a validation adapter) only records the phase's outcome.
func (e *Engine) HasResources() bool { return len(e.task.Resources) > 0 }

// WatchesResources reports whether every resource's transport watches
// what it applies (and so stamps the labels its watch selects): a change of
// readiness of anything this adapter applies then wakes the workflow.
func (e *Engine) WatchesResources() bool {
	if len(e.task.Resources) == 0 {
		return false
	}
	for i := range e.task.Resources {
		w, ok := e.opts.Transports[e.task.Resources[i].Client()].(transport.Watcher)
		if !ok || !w.Watches() {
			return false
		}
	}
	return true
}

// Task exposes the task config (for tooling).
func (e *Engine) Task() *taskconfig.TaskConfig { return e.task }

// Result is the outcome of a whole run.
type Result struct {
	State *State
	Post  *PostResult
}

// Run executes the four phases for one event.
func (e *Engine) Run(ctx context.Context, event map[string]any) (*Result, error) {
	st := e.Prepare(ctx, event)
	e.ApplyResources(ctx, st)
	post, err := e.Report(ctx, st)
	return &Result{State: st, Post: post}, err
}

// Prepare runs params and preconditions: the first activity of a round.
func (e *Engine) Prepare(ctx context.Context, event map[string]any) *State {
	st := NewState(NormalizeEvent(event))
	log := e.logFor(st)
	ctx, span := e.phaseSpan(ctx, PhasePreconditions, st)
	defer func() { e.endSpan(span, st, st.Trace.Preconditions.Outcome) }()
	start := time.Now()
	e.params(ctx, st)
	e.observe(PhaseParams, st.Trace.Params.Outcome, start)
	if st.Meta.ExecutionError == nil {
		start = time.Now()
		e.preconditions(ctx, st)
		e.observe(PhasePreconditions, st.Trace.Preconditions.Outcome, start)
	} else {
		st.Trace.Preconditions.Outcome = OutcomeSkipped
		st.Trace.Preconditions.Reason = "params failed"
	}
	log.Debug().Str("params", st.Trace.Params.Outcome).Str("preconditions", st.Trace.Preconditions.Outcome).
		Bool("resources_skipped", st.Meta.ResourcesSkipped).Msg("prepared")
	return st
}

// ApplyResources runs the resources phase: the second activity.
func (e *Engine) ApplyResources(ctx context.Context, st *State) {
	ctx, span := e.phaseSpan(ctx, PhaseResources, st)
	defer func() { e.endSpan(span, st, st.Trace.Resources.Outcome) }()
	start := time.Now()
	e.resources(ctx, st)
	e.observe(PhaseResources, st.Trace.Resources.Outcome, start)
}

// Report runs the post phase: the third activity. It always runs.
func (e *Engine) Report(ctx context.Context, st *State) (*PostResult, error) {
	ctx, span := e.phaseSpan(ctx, PhasePost, st)
	start := time.Now()
	res, err := e.post(ctx, st)
	tracing.Fail(span, err)
	e.endSpan(span, st, st.Trace.Post.Outcome)
	e.observe(PhasePost, st.Trace.Post.Outcome, start)
	outcome := "success"
	switch {
	case err != nil || st.Meta.ExecutionStatus == StatusFailed:
		outcome = "failed"
	case st.Meta.ResourcesSkipped:
		outcome = "skipped"
	}
	e.opts.Metrics.Run(e.name, outcome)
	ev := e.logFor(st).Info()
	if outcome == "failed" {
		ev = e.logFor(st).Warn()
		if st.Meta.ExecutionError != nil {
			ev = ev.Str("phase", st.Meta.ExecutionError.Phase).Str("step", st.Meta.ExecutionError.Step).Str("error", st.Meta.ExecutionError.Message)
		}
		if err != nil {
			ev = ev.AnErr("post_error", err)
		}
	}
	ev.Str("outcome", outcome).Str("skip_reason", st.Meta.SkipReason).Msg("adapter run finished")
	return res, err
}

// phaseSpan starts the span of one phase as a child of the span in ctx
// (the activity's); without a traced caller it is a no-op.
func (e *Engine) phaseSpan(ctx context.Context, phase string, st *State) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "adapter."+phase)
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{tracing.AttrAdapter.String(e.name), tracing.AttrPhase.String(phase)}
	if id, ok := st.Event["id"].(string); ok {
		attrs = append(attrs, tracing.AttrResourceID.String(id))
	}
	if k, ok := st.Event["kind"].(string); ok {
		attrs = append(attrs, tracing.AttrKind.String(k))
	}
	if g, ok := eventGeneration(st.Event["generation"]); ok {
		attrs = append(attrs, tracing.AttrGeneration.Int64(g))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endSpan records a phase's outcome and ends its span.
func (e *Engine) endSpan(span trace.Span, st *State, outcome string) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hyperfleet.adapter.outcome", strings.ToLower(outcome)))
		if st.Meta.ExecutionError != nil {
			span.SetAttributes(attribute.String("hyperfleet.adapter.error", st.Meta.ExecutionError.Message))
		}
	}
	span.End()
}

// eventGeneration reads the generation of an event, decoded from JSON
// (float64) or built in Go (int64, int).
func eventGeneration(v any) (int64, bool) {
	switch g := v.(type) {
	case int64:
		return g, true
	case int:
		return int64(g), true
	case float64:
		return int64(g), true
	case json.Number:
		n, err := g.Int64()
		return n, err == nil
	}
	return 0, false
}

func (e *Engine) observe(phase, outcome string, start time.Time) {
	e.opts.Metrics.Phase(e.name, phase, strings.ToLower(outcome), time.Since(start))
}

// logFor returns a logger carrying the resource id, generation and adapter.
func (e *Engine) logFor(st *State) *zerolog.Logger {
	l := e.opts.Logger.With().Str("adapter", e.name)
	if id, ok := st.Event["id"].(string); ok {
		l = l.Str("resource_id", id)
	}
	if k, ok := st.Event["kind"].(string); ok {
		l = l.Str("kind", k)
	}
	if g, ok := st.Event["generation"]; ok {
		l = l.Interface("generation", g)
	}
	logger := l.Logger()
	return &logger
}

// NormalizeEvent accepts the bare event or a CloudEvent wrapping it in data.
func NormalizeEvent(event map[string]any) map[string]any {
	if event == nil {
		return map[string]any{}
	}
	if data, ok := event["data"].(map[string]any); ok {
		if _, isCloudEvent := event["specversion"]; isCloudEvent {
			return data
		}
	}
	return event
}

// templateData is what templates see: every variable and adapter.*.
func (e *Engine) templateData(st *State, extra map[string]any) map[string]any {
	vars := make(map[string]any, len(st.Vars)+len(extra)+1)
	for k, v := range st.Vars {
		vars[k] = v
	}
	vars["adapter"] = st.adapterView(e.name, e.version)
	data := template.Data(vars)
	for k, v := range extra {
		data[k] = v
	}
	return data
}

func (e *Engine) render(text string, data map[string]any) (string, error) {
	return e.tpl.Render(text, data)
}

// evalCEL compiles (cached) and evaluates an expression over the state.
func (e *Engine) evalCEL(ctx context.Context, src string, vars map[string]any) (any, error) {
	p, err := e.cel.Compile(src, e.declared)
	if err != nil {
		return nil, err
	}
	return p.Eval(ctx, vars)
}

func (e *Engine) evalBool(ctx context.Context, src string, vars map[string]any) (bool, error) {
	v, err := e.evalCEL(ctx, src, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression %q must yield true or false, got %v", strings.TrimSpace(src), v)
	}
	return b, nil
}
