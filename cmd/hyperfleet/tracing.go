package main

import (
	"context"
	"os"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/hyperfleet/hyperfleet/internal/tracing"
)

// tracingFlags switch OpenTelemetry tracing on (serve, worker, dev). The
// rest of the exporter's settings (headers, TLS, timeouts) are the standard
// OTEL_EXPORTER_OTLP_* variables, which the exporter reads itself.
type tracingFlags struct {
	cfg tracing.Config
}

func (t *tracingFlags) add(fs *pflag.FlagSet, service string) {
	fs.StringVar(&t.cfg.Endpoint, "otel-endpoint", "", "OTLP/gRPC collector to send traces to, e.g. http://otel-collector:4317 (plain text) or https://... (TLS); "+
		"empty: OTEL_EXPORTER_OTLP_ENDPOINT if set, otherwise tracing is off")
	fs.StringVar(&t.cfg.ServiceName, "otel-service-name", service, "service.name of this process's spans (OTEL_SERVICE_NAME overrides it)")
}

// setup starts tracing (a no-op provider when off) and says which.
func (t *tracingFlags) setup(ctx context.Context, log zerolog.Logger) (*tracing.Tracing, error) {
	tr, err := tracing.Setup(ctx, t.cfg)
	if err != nil {
		return nil, err
	}
	if tr.Enabled() {
		endpoint := t.cfg.Endpoint
		if endpoint == "" {
			endpoint = os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		}
		if endpoint == "" {
			endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		log.Info().Str("endpoint", endpoint).Str("service", t.cfg.ServiceName).Msg("tracing on: exporting spans over OTLP/gRPC")
	}
	return tr, nil
}

// shutdown flushes the spans still buffered.
func shutdownTracing(ctx context.Context, tr *tracing.Tracing, log zerolog.Logger) {
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("tracing: spans lost at exit")
	}
}
