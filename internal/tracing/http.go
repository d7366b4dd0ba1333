package tracing

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Transport wraps an HTTP transport (nil: the default one) so that a call
// made with a traced context gets a client span and carries its
// traceparent: the adapters' calls to the HyperFleet API and to
// Kubernetes. A call without a traced context passes straight through, so
// watches and background calls make no spans.
func Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if _, ok := next.(*transport); ok {
		return next
	}
	return &transport{next: next}
}

type transport struct{ next http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := Start(req.Context(), "HTTP "+req.Method+" "+spanPath(req),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Host),
			attribute.String("url.path", req.URL.Path)))
	if !span.IsRecording() {
		return t.next.RoundTrip(req)
	}
	defer span.End()
	// A RoundTripper must not change the caller's request.
	req = req.Clone(ctx)
	Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		Fail(span, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}

// spanPath keeps span names few: a Kubernetes path is named by its
// collection (/api/v1/namespaces/{name} -> .../namespaces), a HyperFleet
// path by its last collection segment with ids dropped.
func spanPath(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	kept := parts[:0]
	for _, p := range parts {
		if looksLikeID(p) {
			p = "{id}"
		}
		kept = append(kept, p)
	}
	return "/" + strings.Join(kept, "/")
}

// looksLikeID is true for a UUID (HyperFleet ids, which Kubernetes objects
// of the landing zone are named after too).
func looksLikeID(s string) bool {
	return len(s) == 36 && strings.Count(s, "-") == 4
}
