package apiserver

// The middlewares every request passes through, in the order routes()
// installs them: request id, trace span (when tracing is on), panic
// recovery, access log, header size; then,
// on the API group, authentication, timeout, query and id checks.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
)

const (
	identityKey  = "hyperfleet.identity"
	claimsKey    = "hyperfleet.claims"
	issuerKey    = "hyperfleet.issuer"
	callerKey    = "hyperfleet.caller"
	requestIDKey = "hyperfleet.request_id"
	// bodyReadKey marks a request whose body a handler read to the end.
	bodyReadKey = "hyperfleet.body_read"
)

func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader("X-Request-Id")
	if id == "" || len(id) > 128 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	c.Set(requestIDKey, id)
	c.Header("X-Request-Id", id)
	c.Next()
}

// requestLog is the logger for one request: request id, route and the
// resource ids of the path on every line.
// untracedRoutes are probes and scrapes: a span each would bury the
// collector in traces of nothing.
var untracedRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// traceRequest wraps the request in a server span, the child of the
// caller's traceparent when it sends one (an adapter's status report). The
// span carries the route and the resource the path names; a write that
// bumps a generation adds the resource it changed (lifecycle does, as it
// writes the outbox row that continues this trace).
func (s *Server) traceRequest(c *gin.Context) {
	route := c.FullPath()
	if untracedRoutes[route] {
		c.Next()
		return
	}
	ctx := tracing.Propagator.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	if route == "" {
		route = "unmatched"
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", c.Request.Method),
		attribute.String("http.route", route),
		attribute.String("hyperfleet.request_id", c.GetString(requestIDKey)),
	}
	// The innermost id of the path is the resource addressed.
	for i := len(c.Params) - 1; i >= 0; i-- {
		if kind, ok := s.idKinds[c.Params[i].Key]; ok {
			attrs = append(attrs, tracing.AttrResourceID.String(c.Params[i].Value), tracing.AttrKind.String(kind))
			break
		}
	}
	ctx, span := tracing.Tracer(s.cfg.Tracer).Start(ctx, c.Request.Method+" "+route,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	defer span.End()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	status := c.Writer.Status()
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

func (s *Server) requestLog(c *gin.Context) *zerolog.Logger {
	l := s.log.With().Str("request_id", c.GetString(requestIDKey)).Str("method", c.Request.Method).Str("route", c.FullPath())
	for _, p := range c.Params {
		// Every path parameter is a resource id (cluster_id, nodepool_id),
		// or whatever a client put in its place.
		l = l.Str(p.Key, problem.Truncate(p.Value, 64))
	}
	if v, ok := c.Get(callerKey); ok {
		if caller := v.(tenancy.Caller); caller.System {
			l = l.Bool("system_caller", true)
		} else {
			l = l.Str("tenancy", caller.Key)
		}
	}
	logger := l.Logger()
	return &logger
}

func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	status := c.Writer.Status()
	ev := s.requestLog(c).Debug()
	if status >= 500 {
		ev = s.requestLog(c).Warn()
	}
	ev.Int("status", status).Dur("latency", time.Since(start)).Str("path", problem.Truncate(c.Request.URL.Path, maxLoggedPath)).Msg("request")
}

func (s *Server) recoverPanic(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.requestLog(c).Error().Interface("panic", r).Msg("handler panicked")
			s.fail(c, problem.New(http.StatusInternalServerError, problem.CodeInternal, "The server failed to process the request; the error was logged"))
		}
	}()
	c.Next()
}

func (s *Server) timeout(c *gin.Context) {
	if watching, _ := watchRequested(c); watching {
		// A watch lasts until its client leaves.
		c.Next()
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

func (s *Server) authenticate(c *gin.Context) {
	principal, err := s.auth.Verify(c.Request.Context(), c.GetHeader("Authorization"))
	if err != nil {
		var ae *auth.Error
		code, status := problem.CodeUnauthenticated, http.StatusUnauthorized
		if errors.As(err, &ae) && ae.Forbidden {
			code, status = problem.CodeForbidden, http.StatusForbidden
		}
		// At info, with the reason and never the token: repeated failures
		// are how a probe or a misconfigured client shows.
		s.requestLog(c).Info().Int("status", status).Str("reason", err.Error()).Str("remote", c.Request.RemoteAddr).
			Str("path", problem.Truncate(c.Request.URL.Path, maxLoggedPath)).Msg("authentication failed")
		s.fail(c, problem.New(status, code, err.Error()))
		return
	}
	c.Set(identityKey, principal.Identity)
	c.Set(issuerKey, principal.Issuer)
	if principal.Claims != nil {
		c.Set(claimsKey, principal.Claims)
	}
	c.Next()
}

// resolveTenancy decides who an authenticated caller is under the tenancy
// file: a system caller, or a tenant with its tenancy, which every
// handler's reads and writes are then scoped to (lifecycle reads it from
// the request's context). A caller without a valid tenancy is refused
// before anything is read.
func (s *Server) resolveTenancy(c *gin.Context) {
	claims, _ := c.Get(claimsKey)
	m, _ := claims.(map[string]any)
	caller, refusal := s.cfg.Tenancy.Resolve(tenancy.Request{
		Header: c.Request.Header.Values, Identity: c.GetString(identityKey), Issuer: c.GetString(issuerKey), Claims: m,
	})
	if refusal != nil && refusal.Credential {
		// A wrong system secret is a failed authentication: logged as
		// one (a probe shows as repeated lines), never with the value.
		s.requestLog(c).Info().Int("status", http.StatusUnauthorized).Str("reason", refusal.Message).Str("source", refusal.Source).
			Str("remote", c.Request.RemoteAddr).Str("path", problem.Truncate(c.Request.URL.Path, maxLoggedPath)).Msg("system credential refused")
		s.fail(c, problem.New(http.StatusUnauthorized, problem.CodeSystemCredential, refusal.Message).
			WithErrors(problem.FieldError{Field: refusal.Source, Constraint: "system_secret", Message: refusal.Message}))
		return
	}
	if refusal != nil {
		s.requestLog(c).Info().Str("reason", refusal.Message).Str("source", refusal.Source).Str("remote", c.Request.RemoteAddr).
			Str("path", problem.Truncate(c.Request.URL.Path, maxLoggedPath)).Msg("tenancy refused")
		s.fail(c, problem.New(http.StatusForbidden, problem.CodeTenancy, refusal.Message).
			WithErrors(problem.FieldError{Field: refusal.Source, Constraint: "tenancy", Message: refusal.Message}))
		return
	}
	c.Set(callerKey, caller)
	c.Request = c.Request.WithContext(tenancy.WithCaller(c.Request.Context(), caller))
	c.Next()
}

// Roles, with a tenancy file: a system caller (the reconciler, the
// adapters) may read everything and write statuses, nothing else; a
// tenant may create, change and delete its own resources but not report
// status, which the aggregation trusts to say whether a resource is
// Ready. Without a tenancy file these checks are not installed.
func (s *Server) tenantsOnly(c *gin.Context) {
	if caller, _ := c.Get(callerKey); caller != nil && caller.(tenancy.Caller).System {
		s.refuseRole(c, "system callers may only write adapter statuses; creating, changing and deleting resources is for tenants")
		return
	}
	c.Next()
}

func (s *Server) systemOnly(c *gin.Context) {
	s.onlySystem(c, "only system callers (the adapters) may report adapter status: a tenant's report could mark a resource Ready that is not")
}

// adoptersOnly: only a system caller (an operator with the system
// credential) assigns a tenancy to a resource stored without one; a
// tenant could otherwise claim any of them.
func (s *Server) adoptersOnly(c *gin.Context) {
	s.onlySystem(c, "only system callers may assign a tenancy to a resource stored before the tenancy file was in place")
}

func (s *Server) onlySystem(c *gin.Context, why string) {
	if caller, _ := c.Get(callerKey); caller == nil || !caller.(tenancy.Caller).System {
		s.refuseRole(c, why)
		return
	}
	c.Next()
}

func (s *Server) refuseRole(c *gin.Context, why string) {
	s.requestLog(c).Info().Str("reason", why).Str("remote", c.Request.RemoteAddr).
		Str("path", problem.Truncate(c.Request.URL.Path, maxLoggedPath)).Msg("refused by role")
	s.fail(c, problem.New(http.StatusForbidden, problem.CodeForbidden, why))
}

func identity(c *gin.Context) string {
	if id := c.GetString(identityKey); id != "" {
		return id
	}
	return auth.SystemIdentity
}

// HeaderLimit bounds the request line and headers. Go's server answers
// beyond MaxHeaderBytes itself, in plain text; below that, this limit
// answers with a problem document.
const HeaderLimit = 64 << 10

func (s *Server) checkHeaderSize(c *gin.Context) {
	n := len(c.Request.Method) + len(c.Request.RequestURI) + len(c.Request.Proto) + 4
	for name, values := range c.Request.Header {
		for _, v := range values {
			n += len(name) + len(v) + 4
		}
	}
	if n > HeaderLimit {
		s.fail(c, problem.Newf(http.StatusRequestHeaderFieldsTooLarge, problem.CodeHeadersTooLarge,
			"the request line and headers are %d bytes; the limit is %d", n, HeaderLimit))
		return
	}
	c.Next()
}

// checkQuery refuses a query string that does not parse: the standard
// library drops the pairs it cannot read (orderBy=name;drop), and a request
// that then succeeds with defaults hides the mistake.
func (s *Server) checkQuery(c *gin.Context) {
	if _, err := url.ParseQuery(c.Request.URL.RawQuery); err != nil {
		s.fail(c, problem.New(http.StatusBadRequest, problem.CodeInvalidParameter,
			"the query string does not parse ("+strings.TrimPrefix(err.Error(), "invalid ")+"); separate parameters with & and percent-encode ; and %"))
		return
	}
	c.Next()
}

// idPattern is the one form resource ids take: a lowercase UUID.
var idPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkIDs answers 404 for a path id that is not exactly a lowercase UUID,
// before anything reads it: no resource has such an id (a trimmed or
// case-folded match would address the wrong thing), and the database must
// not see bytes it cannot compare (NUL, invalid UTF-8).
func (s *Server) checkIDs(c *gin.Context) {
	// Parameters in path order: the outermost bad id is the one named.
	for _, p := range c.Params {
		if kind, ok := s.idKinds[p.Key]; ok && !idPattern.MatchString(p.Value) {
			id := p.Value
			if len(id) > 64 {
				id = id[:64] + "..."
			}
			s.fail(c, problem.NotFound(kind, id))
			return
		}
	}
	c.Next()
}
