// Package temporalclient connects to a Temporal frontend (the embedded
// server of `hyperfleet dev` or an external cluster, with TLS) and adapts
// the SDK's logging to zerolog.
package temporalclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
)

// Config locates a Temporal frontend.
type Config struct {
	// Address is host:port of the frontend (default 127.0.0.1:7233).
	Address   string
	Namespace string
	// TLS, when any file is set or Enabled: mutual TLS with the given
	// client certificate, verified against CAFile (or the system roots).
	TLS TLS
	// APIKey authenticates to Temporal Cloud (implies TLS).
	APIKey string
	// Metrics receives the SDK's metrics and the workflows' own (nil: none);
	// internal/temporalmetrics exports them to Prometheus.
	Metrics client.MetricsHandler
	// Tracer, when set, traces workflow starts and signals, the workflows
	// and their activities with Temporal's OpenTelemetry interceptor;
	// workers built on the client inherit it. Nil: no interceptor at all.
	Tracer trace.TracerProvider
}

// TLS of the connection.
type TLS struct {
	Enabled    bool
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string
}

func (t TLS) on() bool { return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// Options turns a Config into SDK client options.
func Options(cfg Config, logger zerolog.Logger) (client.Options, error) {
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:7233"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	opts := client.Options{HostPort: cfg.Address, Namespace: cfg.Namespace, Logger: Logger(logger), MetricsHandler: cfg.Metrics}
	opts.ConnectionOptions.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(setSignalRequestID)}
	if cfg.TLS.on() || cfg.APIKey != "" {
		tc, err := tlsConfig(cfg.TLS)
		if err != nil {
			return client.Options{}, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	if cfg.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.APIKey)
	}
	if cfg.Tracer != nil {
		ti, err := TracingInterceptor(cfg.Tracer)
		if err != nil {
			return client.Options{}, err
		}
		opts.Interceptors = append(opts.Interceptors, ti)
	}
	if Loopback(cfg.Address) {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	return opts, nil
}

// TracingInterceptor is Temporal's OpenTelemetry interceptor on a given
// provider, with the W3C trace context only (no baggage): the span of a
// start or signal travels in the workflow's headers, the workflow's span
// in each activity's, so one trace runs from the relay to the adapters.
// It only adds headers and spans outside workflow code; replay is
// unaffected.
func TracingInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:              tracing.Tracer(tp),
		TextMapPropagator:   tracing.Propagator,
		DisableBaggage:      true,
		DisableQueryTracing: true,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return ti, nil
}

// Loopback reports whether a host:port names this machine. The SDK gzips
// every call by default; on loopback that saves no bandwidth and costs
// about 5% of the CPU of a busy embedded stack (measured), so it is off.
func Loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Dial connects lazily: the client is usable at once and reconnects while
// Temporal is unreachable (the API must keep accepting writes meanwhile).
func Dial(cfg Config, logger zerolog.Logger) (client.Client, error) {
	opts, err := Options(cfg, logger)
	if err != nil {
		return nil, err
	}
	c, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, fmt.Errorf("temporal client for %s: %w", opts.HostPort, err)
	}
	return c, nil
}

// WaitReachable blocks until the frontend answers a health check.
func WaitReachable(ctx context.Context, c client.Client, within time.Duration) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		hc, hcancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = c.CheckHealth(hc, &client.CheckHealthRequest{})
		hcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			// The caller's context may end the wait before within.
			return fmt.Errorf("temporal not reachable after %s: %w", time.Since(start).Round(time.Second), Explain(last))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func tlsConfig(t TLS) (*tls.Config, error) {
	tc, err := tlsfiles.ClientConfig(tlsfiles.Files{CA: t.CAFile, Cert: t.CertFile, Key: t.KeyFile, ServerName: t.ServerName})
	if err != nil {
		return nil, fmt.Errorf("temporal TLS (--temporal-tls-*): %w", err)
	}
	return tc, nil
}

// Logger adapts zerolog to the SDK, keeping its key-value pairs as fields.
func Logger(l zerolog.Logger) log.Logger { return sdkLogger{l: l} }

type sdkLogger struct{ l zerolog.Logger }

func (s sdkLogger) Debug(msg string, kv ...any) { s.emit(s.l.Debug(), msg, kv) }
func (s sdkLogger) Info(msg string, kv ...any)  { s.emit(s.l.Info(), msg, kv) }
func (s sdkLogger) Warn(msg string, kv ...any)  { s.emit(s.l.Warn(), msg, kv) }
func (s sdkLogger) Error(msg string, kv ...any) { s.emit(s.l.Error(), msg, kv) }

// With keeps fields attached to the workflow and activity loggers.
func (s sdkLogger) With(kv ...any) log.Logger {
	ctx := s.l.With()
	for i := 0; i+1 < len(kv); i += 2 {
		if !quiet(kv[i], kv[i+1]) {
			ctx = ctx.Interface(fmt.Sprint(kv[i]), kv[i+1])
		}
	}
	return sdkLogger{l: ctx.Logger()}
}

// quiet drops the fields the SDK adds to every workflow line that say
// nothing about the resource (the worker's identity, the first attempt):
// the workflow id and run id stay.
func quiet(key, value any) bool {
	switch key {
	case "Namespace", "TaskQueue", "WorkerID", "WorkflowType":
		return true
	case "Attempt":
		return fmt.Sprint(value) == "1"
	}
	return false
}

func (s sdkLogger) emit(ev *zerolog.Event, msg string, kv []any) {
	for i := 0; i+1 < len(kv); i += 2 {
		if quiet(kv[i], kv[i+1]) {
			continue
		}
		if err, ok := kv[i+1].(error); ok {
			ev = ev.AnErr(fmt.Sprint(kv[i]), err)
			continue
		}
		ev = ev.Interface(fmt.Sprint(kv[i]), kv[i+1])
	}
	ev.Msg(msg)
}
