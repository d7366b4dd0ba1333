// Package tracing sets up OpenTelemetry tracing for one process and holds the
// few helpers every part shares: the span attributes, the W3C traceparent
// kept with an outbox row, and an HTTP transport that makes a client span
// per call.
//
// Nothing here touches OpenTelemetry's global provider or propagator. A
// process passes its Provider to the parts that start traces (the API's
// request middleware, the outbox relay, the Temporal interceptor); every
// other span is a child started with the provider of the span already in
// its context (Start), so code that runs without a traced caller, and tests
// that never configure tracing, create nothing and export nothing.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the tracer of every HyperFleet span.
const InstrumentationName = "github.com/hyperfleet/hyperfleet"

// Span attributes: the same keys on the HTTP, relay and adapter spans, so
// one query finds every span of a resource.
const (
	AttrResourceID = attribute.Key("hyperfleet.resource.id")
	AttrKind       = attribute.Key("hyperfleet.resource.kind")
	AttrGeneration = attribute.Key("hyperfleet.resource.generation")
	AttrAdapter    = attribute.Key("hyperfleet.adapter")
	AttrPhase      = attribute.Key("hyperfleet.adapter.phase")
)

// Resource is the attribute set naming one resource at one generation.
func Resource(kind, id string, generation int64) []attribute.KeyValue {
	return []attribute.KeyValue{AttrKind.String(kind), AttrResourceID.String(id), AttrGeneration.Int64(generation)}
}

// Config of a process's tracing.
type Config struct {
	// Endpoint is the OTLP/gRPC collector, as a URL (http://collector:4317
	// is plain text, https:// is TLS) or host:port (TLS). Empty: the
	// standard OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) if set,
	// otherwise tracing is off.
	Endpoint string
	// ServiceName is the service.name of every span (OTEL_SERVICE_NAME
	// overrides it, as the OpenTelemetry specification says).
	ServiceName string
}

// endpointEnv are the standard variables that switch the exporter on.
var endpointEnv = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// Enabled reports whether cfg (or the environment) names a collector.
func (c Config) Enabled() bool {
	if c.Endpoint != "" {
		return true
	}
	for _, v := range endpointEnv {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Tracing is a process's provider and what flushes it.
type Tracing struct {
	// Provider starts the traces of this process: a no-op when off.
	Provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider
}

// Off is tracing switched off: a no-op provider, no exporter.
func Off() *Tracing { return &Tracing{Provider: noop.NewTracerProvider()} }

// Setup builds the provider: an OTLP/gRPC batch exporter when cfg is
// enabled, a no-op provider (nothing recorded, nothing sent) otherwise. The
// exporter connects lazily, so a collector that is down costs dropped
// spans, never a failed start.
func Setup(ctx context.Context, cfg Config) (*Tracing, error) {
	if !cfg.Enabled() {
		return Off(), nil
	}
	var opts []otlptracegrpc.Option
	if cfg.Endpoint != "" {
		opts = append(opts, otlptracegrpc.WithEndpointURL(endpointURL(cfg.Endpoint)))
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %q: %w", cfg.Endpoint, err)
	}
	name := cfg.ServiceName
	if env := os.Getenv("OTEL_SERVICE_NAME"); env != "" {
		name = env
	}
	if name == "" {
		name = "hyperfleet"
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", name))),
	)
	return &Tracing{Provider: tp, sdk: tp}, nil
}

// endpointURL accepts host:port as well as a URL: a bare host:port is TLS,
// as for the standard variable.
func endpointURL(e string) string {
	if len(e) > 7 && (e[:7] == "http://" || (len(e) > 8 && e[:8] == "https://")) {
		return e
	}
	return "https://" + e
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// Shutdown exports what is buffered and stops the exporter; bounded, so a
// collector that is down does not hold up the process's exit.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := t.sdk.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// Tracer is the HyperFleet tracer of a provider (a no-op one when nil).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(InstrumentationName)
}

// Start starts a child of the span in ctx with that span's provider. With
// no recording span in ctx it returns ctx and a no-op span at the cost of a
// context lookup: the engine and the transports call it unconditionally.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(InstrumentationName).Start(ctx, name, opts...)
}

// Fail marks a span failed with err (nil: nothing).
func Fail(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Propagator is the W3C trace context propagator every hop uses: the HTTP
// headers, the outbox row and the Temporal headers.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// TraceParent is the W3C traceparent of the span in ctx ("" without one):
// what an outbox row keeps so the relay continues the request's trace.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceParent returns ctx carrying the remote span a traceparent names;
// ctx unchanged when it is empty or does not parse.
func WithTraceParent(ctx context.Context, traceParent string) context.Context {
	if traceParent == "" {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceParent})
}
