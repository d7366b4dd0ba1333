package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// Off is a no-op provider, and nothing in the environment switches it on.
func TestOffWithoutEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := Setup(context.Background(), Config{})
	if err != nil || tr.Enabled() {
		t.Fatalf("Setup without an endpoint: enabled=%v, %v", tr.Enabled(), err)
	}
	_, span := Tracer(tr.Provider).Start(context.Background(), "x")
	if span.IsRecording() {
		t.Error("a span of the disabled provider records")
	}
	if !(Config{Endpoint: "http://127.0.0.1:4317"}).Enabled() {
		t.Error("an endpoint does not enable tracing")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")
	if !(Config{}).Enabled() {
		t.Error("OTEL_EXPORTER_OTLP_ENDPOINT does not enable tracing")
	}
}

// Start makes children with the parent's provider only: no parent, no span.
func TestStartFollowsTheParent(t *testing.T) {
	if _, span := Start(context.Background(), "orphan"); span.IsRecording() {
		t.Error("a span without a traced parent records")
	}
	tp, rec := recorder(t)
	ctx, parent := Tracer(tp).Start(context.Background(), "parent")
	_, child := Start(ctx, "child")
	child.End()
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "child" || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans = %v, want child under parent", spans)
	}
}

// A traceparent survives the outbox row: the relay's span continues the
// request's trace.
func TestTraceParentRoundTrip(t *testing.T) {
	if TraceParent(context.Background()) != "" || WithTraceParent(context.Background(), "") != context.Background() {
		t.Fatal("an untraced context has a traceparent")
	}
	tp, _ := recorder(t)
	ctx, span := Tracer(tp).Start(context.Background(), "request")
	defer span.End()
	tpHeader := TraceParent(ctx)
	got := trace.SpanContextFromContext(WithTraceParent(context.Background(), tpHeader))
	if !got.IsRemote() || got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("traceparent %q read back as %v", tpHeader, got)
	}
	if WithTraceParent(context.Background(), "garbage") == nil || trace.SpanContextFromContext(WithTraceParent(context.Background(), "garbage")).IsValid() {
		t.Error("an unparsable traceparent yields a span context")
	}
}

// The transport makes a client span for a traced call and sends its
// traceparent; an untraced call passes through untouched.
func TestTransport(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(nil)}
	get := func(ctx context.Context, path string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get(context.Background(), "/plain")
	tp, rec := recorder(t)
	ctx, parent := Tracer(tp).Start(context.Background(), "phase")
	get(ctx, "/api/hyperfleet/v1/clusters/0b5e3c7a-2f7e-4c1e-9d8a-1f2e3d4c5b6a/statuses")
	parent.End()
	if seen[0] != "" {
		t.Errorf("an untraced call sent traceparent %q", seen[0])
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("spans = %v, want the client span and its parent", spans)
	}
	client := spans[0]
	if client.Name() != "HTTP GET /api/hyperfleet/v1/clusters/{id}/statuses" || client.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("client span %q under %v", client.Name(), client.Parent().SpanID())
	}
	want := "00-" + client.SpanContext().TraceID().String() + "-" + client.SpanContext().SpanID().String() + "-01"
	if seen[1] != want {
		t.Errorf("traceparent sent = %q, want the client span's %q", seen[1], want)
	}
}
