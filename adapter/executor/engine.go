// Package executor runs an adapter task config: params, preconditions,
// resources and post, exactly as the adapter authoring guide describes, with
// the adapter.* context the post expressions read. It has no Temporal
// dependency: the adapter activity, dry-run and tests all run it through
// RunEvent, which owns the order of the phases.
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
	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
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

// Unwatched says why a change to what this adapter applies could go
// unnoticed between rounds: the first resource whose transport does not
// watch what it applies, or whose watch is not working now. "" when every
// object is watched, and for an adapter that applies nothing (nothing of
// its own can drift). A resource whose adapter has something unwatched
// keeps the short safety-net window (reconcile.Options).
func (e *Engine) Unwatched() string {
	for i := range e.task.Resources {
		r := &e.task.Resources[i]
		w, ok := e.opts.Transports[r.Client()].(transport.Watcher)
		if !ok || !w.Watches() {
			return fmt.Sprintf("resource %s: its %s transport does not watch what it applies", r.Name, r.Client())
		}
		if h, ok := w.(transport.WatchHealth); ok && !h.WatchHealthy() {
			return fmt.Sprintf("resource %s: the %s watch is not working (see the worker's log)", r.Name, r.Client())
		}
	}
	return ""
}

// Task exposes the task config (for tooling).
func (e *Engine) Task() *taskconfig.TaskConfig { return e.task }

// Result is the outcome of a whole run.
type Result struct {
	State *State
	Post  *PostResult
	// Took is how long each phase ran; params run within preconditions'
	// time.
	Took map[phase.Name]time.Duration
}

// Run executes the four phases for an event as tools hold it (the bare
// event or a CloudEvent carrying it in data); one ParseEvent cannot read
// runs nothing and is the error.
func (e *Engine) Run(ctx context.Context, raw map[string]any) (*Result, error) {
	ev, err := ParseEvent(raw)
	if err != nil {
		return nil, err
	}
	return e.RunEvent(ctx, ev, nil)
}

// RunEvent executes the four phases for one event, in their order: params
// and preconditions, resources, then post, which always runs. onPhase,
// when set, is told each phase's name as it starts (the activity's
// heartbeat carries it). The error is the post phase's.
func (e *Engine) RunEvent(ctx context.Context, ev resource.Event, onPhase func(phase.Name)) (*Result, error) {
	res := &Result{Took: make(map[phase.Name]time.Duration, 3)}
	var err error
	for _, p := range []struct {
		name phase.Name
		run  func()
	}{
		{phase.Preconditions, func() { res.State = e.prepare(ctx, ev) }},
		{phase.Resources, func() { e.applyResources(ctx, res.State) }},
		{phase.Post, func() { res.Post, err = e.report(ctx, res.State) }},
	} {
		if onPhase != nil {
			onPhase(p.name)
		}
		start := time.Now()
		p.run()
		res.Took[p.name] = time.Since(start)
	}
	return res, err
}

// prepare runs params and preconditions.
func (e *Engine) prepare(ctx context.Context, ev resource.Event) *State {
	st := newState(ev)
	log := e.logFor(st)
	ctx, span := e.phaseSpan(ctx, phase.Preconditions, st)
	defer func() { e.endSpan(span, st, st.Trace.Preconditions.Outcome) }()
	start := time.Now()
	e.params(ctx, st)
	e.observe(phase.Params, st.Trace.Params.Outcome, start)
	if st.Meta.ExecutionError == nil {
		start = time.Now()
		e.preconditions(ctx, st)
		e.observe(phase.Preconditions, st.Trace.Preconditions.Outcome, start)
	} else {
		st.Trace.Preconditions.Outcome = phase.Skipped
		st.Trace.Preconditions.Reason = "params failed"
	}
	log.Debug().Str("params", string(st.Trace.Params.Outcome)).Str("preconditions", string(st.Trace.Preconditions.Outcome)).
		Bool("resources_skipped", st.Meta.ResourcesSkipped).Msg("prepared")
	return st
}

// applyResources runs the resources phase.
func (e *Engine) applyResources(ctx context.Context, st *State) {
	ctx, span := e.phaseSpan(ctx, phase.Resources, st)
	defer func() { e.endSpan(span, st, st.Trace.Resources.Outcome) }()
	start := time.Now()
	e.resources(ctx, st)
	e.observe(phase.Resources, st.Trace.Resources.Outcome, start)
}

// report runs the post phase.
func (e *Engine) report(ctx context.Context, st *State) (*PostResult, error) {
	ctx, span := e.phaseSpan(ctx, phase.Post, st)
	start := time.Now()
	res, err := e.post(ctx, st)
	tracing.Fail(span, err)
	e.endSpan(span, st, st.Trace.Post.Outcome)
	e.observe(phase.Post, st.Trace.Post.Outcome, start)
	outcome := metrics.RunSuccess
	switch {
	case err != nil || st.Meta.ExecutionStatus == phase.ExecutionFailed:
		outcome = metrics.RunFailed
	case st.Meta.ResourcesSkipped:
		outcome = metrics.RunSkipped
	}
	e.opts.Metrics.Run(e.name, outcome)
	ev := e.logFor(st).Info()
	if outcome == metrics.RunFailed {
		ev = e.logFor(st).Warn()
		if st.Meta.ExecutionError != nil {
			ev = ev.Str("phase", string(st.Meta.ExecutionError.Phase)).Str("step", st.Meta.ExecutionError.Step).Str("error", st.Meta.ExecutionError.Message)
		}
		if err != nil {
			ev = ev.AnErr("post_error", err)
		}
	}
	ev.Str("outcome", string(outcome)).Str("skip_reason", st.Meta.SkipReason).Msg("adapter run finished")
	return res, err
}

// phaseSpan starts the span of one phase as a child of the span in ctx
// (the activity's); without a traced caller it is a no-op.
func (e *Engine) phaseSpan(ctx context.Context, name phase.Name, st *State) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "adapter."+string(name))
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{tracing.AttrAdapter.String(e.name), tracing.AttrPhase.String(string(name))}
	span.SetAttributes(append(attrs, tracing.Resource(st.Event.Kind, st.Event.ID, st.Event.Generation)...)...)
	return ctx, span
}

// endSpan records a phase's outcome and ends its span.
func (e *Engine) endSpan(span trace.Span, st *State, outcome phase.Outcome) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hyperfleet.adapter.outcome", strings.ToLower(string(outcome))))
		if st.Meta.ExecutionError != nil {
			span.SetAttributes(attribute.String("hyperfleet.adapter.error", st.Meta.ExecutionError.Message))
		}
	}
	span.End()
}

func (e *Engine) observe(name phase.Name, outcome phase.Outcome, start time.Time) {
	// Metric labels keep their lower-case spelling (dashboards select on it).
	e.opts.Metrics.Phase(e.name, string(name), strings.ToLower(string(outcome)), time.Since(start))
}

// logFor returns a logger carrying the resource id, generation and adapter.
func (e *Engine) logFor(st *State) *zerolog.Logger {
	logger := e.opts.Logger.With().Str("adapter", e.name).Str("resource_id", st.Event.ID).
		Str("kind", st.Event.Kind).Int64("generation", st.Event.Generation).Logger()
	return &logger
}

// ParseEvent reads an event as tools hold it, decoded from JSON or built
// in Go: the bare event ({id, kind, href, generation[, owner_references]})
// or a CloudEvent carrying it in data. Fields the event does not define are
// ignored, as a reconcile never carries them.
func ParseEvent(raw map[string]any) (resource.Event, error) {
	var ev resource.Event
	if data, ok := raw["data"].(map[string]any); ok {
		if _, isCloudEvent := raw["specversion"]; isCloudEvent {
			raw = data
		}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return ev, fmt.Errorf("the event: %w", err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("the event: %w", err)
	}
	return ev, nil
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
