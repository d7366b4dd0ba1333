// Package apiserver is the HyperFleet REST API: the Gin router, its
// handlers and middleware, and the HTTP server's life cycle. The rules the
// handlers apply live in the sub-packages (lifecycle, aggregation,
// statusreport, search); this package only translates HTTP to calls and
// errors to RFC 9457 problems.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/metrics"
	"github.com/hyperfleet/hyperfleet/apiserver/openapi"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
)

// Config of the HTTP server.
type Config struct {
	// Listen is the address of the API (":8000").
	Listen string
	// BodyLimit bounds request bodies in bytes.
	BodyLimit int64
	// SpecLimit bounds the spec of one resource in bytes (as sent).
	SpecLimit int64
	// StatusDataLimit bounds a status report's data and its metadata, each,
	// in bytes (as sent).
	StatusDataLimit int64
	// RequestTimeout bounds the work of one request.
	RequestTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's line and headers, and ReadTimeout the whole request, body
	// included, from its first byte: a client that trickles either is
	// disconnected instead of holding a connection open indefinitely.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// ShutdownGrace is how long readiness reports "shutting down" before the
	// listener closes, so load balancers stop sending traffic first.
	ShutdownGrace time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests.
	ShutdownTimeout time.Duration
	// Version and BuildTime are reported by GET /api/hyperfleet.
	Version   string
	BuildTime string
	// Tracer starts a server span per request, continuing a caller's W3C
	// traceparent; nil: no tracing, and no middleware for it.
	Tracer trace.TracerProvider
	// Tenancy scopes every resource route by tenant and gives callers
	// roles (package tenancy); nil: no tenancy, every caller sees and
	// does everything, as before tenancy existed.
	Tenancy *tenancy.Config
}

// Defaults of the read timeouts: a 1 MiB body arrives within 30 s at
// 35 KB/s.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
)

// Check is one readiness dependency.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// serverStore is what the HTTP layer asks the store itself: whether the
// database answers (readyz), where a change waits in the outbox, and the
// change log's window. Everything else goes through lifecycle.
type serverStore interface {
	store.Database
	store.Admissions
	store.ChangeLog
}

// Server is the API's HTTP server.
type Server struct {
	cfg     Config
	svc     *lifecycle.Service
	store   serverStore
	auth    *auth.Authenticator
	metrics *metrics.Metrics
	log     zerolog.Logger
	engine  *gin.Engine
	openapi []byte
	// idKinds maps a path parameter (cluster_id) to its kind.
	idKinds map[string]string
	// fieldRoutes are the routes that take fields= (fields.go).
	fieldRoutes map[string]bool
	shutting    atomic.Bool

	mu     sync.Mutex
	checks []Check
	// failing holds each failing check's last error, so a failure is
	// logged when it starts or changes, not on every probe.
	failing map[string]string
	// recon is what the reconciliation endpoint reads (nil: no engine).
	recon reconciliationSource
	// hub serves watches (nil: none).
	hub *watch.Hub
}

// New assembles the router.
func New(cfg Config, svc *lifecycle.Service, st serverStore, authn *auth.Authenticator, m *metrics.Metrics, log zerolog.Logger) (*Server, error) {
	doc, err := openapi.DocumentFor(svc.Kinds())
	if err != nil {
		return nil, err
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	s := &Server{cfg: cfg, svc: svc, store: st, auth: authn, metrics: m, log: log, openapi: doc, idKinds: map[string]string{}, failing: map[string]string{}}
	for _, k := range svc.Kinds().All() {
		s.idKinds[idParam(k.Kind)] = k.Kind
	}
	s.idKinds[resourceIDParam] = "Resource"
	s.checks = []Check{{Name: "database", Check: st.Ping}}
	if s.engine, err = s.buildRoutes(); err != nil {
		return nil, err
	}
	return s, nil
}

// buildRoutes turns a route conflict, which gin reports by panicking, into
// a start-up error: the routes come from the kinds table, which is data.
func (s *Server) buildRoutes() (e *gin.Engine, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the kinds table's routes conflict: %v", r)
		}
	}()
	return s.routes(), nil
}

// AddReadinessCheck adds a dependency to /readyz (the workflow engine).
func (s *Server) AddReadinessCheck(c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, c)
}

// ServeWatches makes the lists stream changes with watch=true, from h.
func (s *Server) ServeWatches(h *watch.Hub) { s.hub = h }

// Handler is the root HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

// Engine exposes the router (tests compare its routes with the OpenAPI
// document).
func (s *Server) Engine() *gin.Engine { return s.engine }

// Run serves until ctx is cancelled, then drains: readiness turns 503 for
// ShutdownGrace, the listener closes and in-flight requests finish.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on an existing listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.engine,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		MaxHeaderBytes:    1 << 20, // HeaderLimit answers below this with a problem document
		IdleTimeout:       2 * time.Minute,
	}
	if s.hub != nil {
		// Watches last until their clients leave: end them, or the
		// drain would wait for ShutdownTimeout.
		srv.RegisterOnShutdown(s.hub.Close)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info().Str("listen", ln.Addr().String()).Msg("API listening")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.shutting.Store(true)
	s.log.Info().Dur("grace", s.cfg.ShutdownGrace).Msg("shutting down: readiness now 503")
	time.Sleep(s.cfg.ShutdownGrace)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("drain HTTP server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	s.log.Info().Msg("API stopped")
	return nil
}

type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, health{Status: "ok"})
}

func (s *Server) readyz(c *gin.Context) {
	if s.shutting.Load() {
		c.JSON(http.StatusServiceUnavailable, health{Status: "shutting-down"})
		return
	}
	// ?exclude=<name> (repeatable) skips a check, as the Kubernetes
	// apiserver's /readyz does: a readiness probe excludes the workflow
	// engine because writes keep working while Temporal is down.
	excluded := c.QueryArray("exclude")
	s.mu.Lock()
	var checks []Check
	for _, chk := range s.checks {
		if !slices.Contains(excluded, chk.Name) {
			checks = append(checks, chk)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	out := health{Status: "ok", Checks: map[string]string{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, chk := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := chk.Check(ctx)
			s.noteCheck(chk.Name, err)
			// The probe is open to anyone: the cause (the database's user,
			// name, host and port in a driver's error) goes to the log only.
			res := "ok"
			if err != nil {
				res = "unavailable"
			}
			mu.Lock()
			out.Checks[chk.Name] = res
			if res != "ok" {
				out.Status = "unavailable"
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	code := http.StatusOK
	if out.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	c.JSON(code, out)
}

// noteCheck logs a readiness check's cause when it starts failing or its
// error changes, and its recovery.
func (s *Server) noteCheck(name string, err error) {
	s.mu.Lock()
	last, was := s.failing[name]
	if err == nil {
		delete(s.failing, name)
	} else {
		s.failing[name] = err.Error()
	}
	s.mu.Unlock()
	switch {
	case err != nil && (!was || last != err.Error()):
		s.log.Warn().Str("check", name).Err(err).Msg("readiness check failing")
	case err == nil && was:
		s.log.Info().Str("check", name).Msg("readiness check ok again")
	}
}

// Routes lists "METHOD /path" for every route, with parameters in OpenAPI
// form ({id}).
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.engine.Routes() {
		out = append(out, r.Method+" "+ginPathToOpenAPI(r.Path))
	}
	sort.Strings(out)
	return out
}

func ginPathToOpenAPI(p string) string {
	b := []byte{}
	for i := 0; i < len(p); i++ {
		if p[i] != ':' {
			b = append(b, p[i])
			continue
		}
		j := i + 1
		for j < len(p) && p[j] != '/' {
			j++
		}
		b = append(b, '{')
		b = append(b, p[i+1:j]...)
		b = append(b, '}')
		i = j - 1
	}
	return string(b)
}
