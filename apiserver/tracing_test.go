package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// With a tracer, a write is a server span continuing the caller's
// traceparent, carrying the resource it created, and its outbox row keeps
// that span's traceparent for the relay; probes make no span.
func TestTraceRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background()) //nolint:errcheck
	app, err := Build(context.Background(), Options{
		Server:     Config{Tracer: tp},
		Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hyperfleet.db")},
		Registered: map[string][]string{resource.KindCluster: {"validation"}, resource.KindNodePool: {"np"}},
		Logger:     zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	do := func(method, path, body string, header map[string]string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		app.Server.Handler().ServeHTTP(w, req)
		return w.Code
	}
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if code := do(http.MethodPost, resource.BasePath+"/clusters", `{"kind":"Cluster","name":"traced","spec":{}}`, map[string]string{"traceparent": caller}); code != http.StatusCreated {
		t.Fatalf("create: HTTP %d", code)
	}
	if code := do(http.MethodGet, "/healthz", "", nil); code != http.StatusOK {
		t.Fatalf("healthz: HTTP %d", code)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("spans = %d, want the create's only (probes are not traced)", len(spans))
	}
	s := spans[0]
	if s.Name() != "POST "+resource.BasePath+"/clusters" || s.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("span %q with parent %v, want the caller's", s.Name(), s.Parent())
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["hyperfleet.resource.kind"] != resource.KindCluster || attrs["hyperfleet.resource.generation"] != "1" ||
		attrs["hyperfleet.resource.id"] == "" || attrs["http.response.status_code"] != "201" {
		t.Errorf("attributes = %v", attrs)
	}
	rows, err := app.Store.PendingOutbox(context.Background(), 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("outbox = %v, %v", rows, err)
	}
	want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	if rows[0].TraceParent != want || rows[0].ResourceID != attrs["hyperfleet.resource.id"] {
		t.Errorf("outbox row %+v, want traceparent %s", rows[0], want)
	}
}
