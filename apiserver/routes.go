package apiserver

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.Use(s.requestID)
	if s.cfg.Tracer != nil {
		r.Use(s.traceRequest)
	}
	r.Use(s.recoverPanic, s.accessLog, s.checkHeaderSize)
	if s.metrics != nil {
		r.Use(s.metrics.Middleware())
	}
	r.Use(s.compressResponses)
	r.NoRoute(func(c *gin.Context) {
		s.fail(c, problem.Newf(http.StatusNotFound, problem.CodeRouteNotFound, "no route for %s %s",
			problem.Truncate(c.Request.Method, 32), problem.Truncate(c.Request.URL.Path, maxEchoedPath)))
	})
	r.NoMethod(func(c *gin.Context) {
		s.fail(c, problem.Newf(http.StatusMethodNotAllowed, problem.CodeMethodNotAllowed, "%s is not allowed on %s",
			problem.Truncate(c.Request.Method, 32), problem.Truncate(c.Request.URL.Path, maxEchoedPath)))
	})

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	var service []gin.HandlerFunc
	if s.auth.ProtectsService() {
		service = append(service, s.authenticate)
	}
	if s.metrics != nil {
		r.GET("/metrics", append(service, gin.WrapH(s.metrics.Handler()))...)
	}
	r.GET("/api/hyperfleet", append(service, s.metadata)...)

	v1 := r.Group(resource.BasePath)
	v1.GET("/openapi", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", s.openapi) })
	v1.GET("/openapi.html", s.openapiPage)

	api := v1.Group("", s.authenticate, s.timeout, s.checkQuery, s.checkIDs)
	if s.cfg.Tenancy != nil {
		api.Use(s.resolveTenancy)
	}
	api.Use(s.checkFields)
	for _, k := range s.svc.Kinds().All() {
		s.kindRoutes(api, k)
	}
	// Every kind at once: a list searchable by kind, and a get by id for a
	// caller that holds an id but not its kind or parent.
	s.getProjectable(api, "/resources", s.handle(func(c *gin.Context) error { return s.list(c, "", "ResourceList", "") }))
	s.getProjectable(api, "/resources/:"+resourceIDParam, s.handle(func(c *gin.Context) error {
		r, err := s.svc.GetAny(c.Request.Context(), c.Param(resourceIDParam))
		if err != nil {
			return err
		}
		return writeResource(c, http.StatusOK, r)
	}))
	return r
}

// kindRoutes serves one kind of the table. A kind without parent lives at
// /<plural>/{<kind>_id}; a child kind is listed across parents at
// /<plural> and otherwise lives under its parent, at
// /<parent plural>/{<parent>_id}/<plural>/{<kind>_id}: as clusters and
// node pools always have.
func (s *Server) kindRoutes(api *gin.RouterGroup, k resource.Kind) {
	kinds := s.svc.Kinds()
	param := idParam(k.Kind)
	s.getProjectable(api, "/"+k.Plural, s.handle(s.listKind(k, "")))
	collection := "/" + k.Plural
	parentParam := ""
	if k.ParentKind != "" {
		parent, _ := kinds.Get(k.ParentKind)
		parentParam = idParam(parent.Kind)
		collection = "/" + parent.Plural + "/:" + parentParam + "/" + k.Plural
		s.getProjectable(api, collection, s.handle(s.listKind(k, parentParam)))
	}
	ref := func(c *gin.Context) lifecycle.Ref {
		r := lifecycle.Ref{Kind: k.Kind, ID: c.Param(param)}
		if parentParam != "" {
			r.ParentID = c.Param(parentParam)
		}
		return r
	}
	item := collection + "/:" + param
	// With tenancy, writes of resources are for tenants, writes of
	// statuses and tenancy assignments for system callers (tenantsOnly,
	// systemOnly, adoptersOnly); each is decided before the resource is
	// read, so a refusal says nothing about whether it exists.
	var tenants, system, adopters []gin.HandlerFunc
	if s.cfg.Tenancy != nil {
		tenants, system, adopters = []gin.HandlerFunc{s.tenantsOnly}, []gin.HandlerFunc{s.systemOnly}, []gin.HandlerFunc{s.adoptersOnly}
	}
	with := func(roles []gin.HandlerFunc, h gin.HandlerFunc) []gin.HandlerFunc {
		return append(append([]gin.HandlerFunc{}, roles...), h)
	}
	api.POST(collection, with(tenants, s.handle(s.createKind(k, parentParam)))...)
	s.getProjectable(api, item, s.handle(s.getResource(ref)))
	api.PATCH(item, with(tenants, s.handle(s.patchResource(ref)))...)
	api.DELETE(item, with(tenants, s.handle(s.deleteResource(ref)))...)
	api.POST(item+"/force-delete", with(tenants, s.handle(s.forceDelete(ref)))...)
	api.GET(item+"/statuses", s.handle(s.listStatuses(ref)))
	api.GET(item+"/reconciliation", s.handle(s.reconciliationOf(ref)))
	api.PUT(item+"/statuses", with(system, s.handle(s.reportStatus(ref)))...)
	api.POST(item+"/statuses", with(system, s.handle(s.reportStatus(ref)))...)
	if k.ParentKind == "" {
		// Adoption of resources stored before tenancy, by system callers;
		// a child has its parent's tenancy and follows it.
		api.PUT(item+"/tenancy", with(adopters, s.handle(s.assignTenancy(ref)))...)
	}
}

// resourceIDParam is the id parameter of GET /resources/{resource_id}.
const resourceIDParam = "resource_id"

// idParam is the path parameter of a kind's id: cluster_id, nodepool_id.
func idParam(kind string) string { return strings.ToLower(kind) + "_id" }

// handle adapts a handler that returns an error: any error becomes a
// problem document, so no handler writes error responses itself.
func (s *Server) handle(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := fn(c); err != nil {
			s.fail(c, err)
		}
	}
}

// Paths echoed in a problem (its instance, a 404's detail) and written to
// the log are cut at these lengths: a 900 KB URL made a 900 KB 404.
// Resource paths are far shorter.
const (
	maxEchoedPath = 256
	maxLoggedPath = 1024
)

// fail renders an error as application/problem+json and logs it: faults
// (5xx) with their internal cause at error level, client errors at debug.
func (s *Server) fail(c *gin.Context, err error) {
	p := problem.From(err)
	if p.Status == http.StatusInternalServerError {
		if dp := databaseProblem(errors.Unwrap(p)); dp != nil {
			p = dp
		}
	}
	out := *p
	out.Instance = problem.Truncate(c.Request.URL.Path, maxEchoedPath)
	out.Timestamp = time.Now().UTC()
	log := s.requestLog(c)
	switch {
	case p.Code == problem.CodeUnavailable || p.Code == problem.CodeStorageFull || p.Code == problem.CodeReadBudget:
		// An outage answers every request this way: the readiness probe
		// and the database's own logs carry it, one warning per request
		// is enough here.
		log.Warn().Err(errors.Unwrap(p)).Str("code", string(p.Code)).Msg(p.Detail)
	case p.Status >= 500:
		log.Error().Err(errors.Unwrap(p)).Str("code", string(p.Code)).Msg(p.Detail)
	default:
		log.Debug().Str("code", string(p.Code)).Int("status", p.Status).Msg(p.Detail)
	}
	if p.Status == http.StatusServiceUnavailable {
		c.Header("Retry-After", p.RetryAfter(5*time.Second))
	}
	if c.Request.ContentLength != 0 && !c.GetBool(bodyReadKey) {
		// Refused before its body was read (no token, a bad path): Go's
		// server would read the rest of the body before answering, for as
		// long as a slow client takes to send it. Answer now and close.
		c.Header("Connection", "close")
	}
	if p.Status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Bearer realm="hyperfleet", error="invalid_token"`)
	}
	c.Header("Content-Type", problem.ContentType)
	c.AbortWithStatusJSON(p.Status, &out)
}

// databaseProblem turns a fault of the database itself (down, restarting,
// out of space) into a 503 or 507 the client can act on; anything else
// stays an internal error.
func databaseProblem(err error) *problem.Problem {
	if err == nil {
		return nil
	}
	switch store.Classify(err) {
	case store.FaultUnavailable:
		return problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable,
			"The database is unavailable, so the request could not be completed; retry shortly (see Retry-After)").WithCause(err)
	case store.FaultStorageFull:
		return problem.New(http.StatusInsufficientStorage, problem.CodeStorageFull,
			"The database has no space left, so the write was not applied; an operator must free space on the database volume, then retry").WithCause(err)
	case store.FaultNone:
		// Not a database fault: the caller handles the error.
	}
	return nil
}

type apiMetadata struct {
	Kind      string    `json:"kind"`
	ID        string    `json:"id"`
	Href      string    `json:"href"`
	Version   string    `json:"version"`
	BuildTime string    `json:"build_time"`
	Versions  []apiLink `json:"versions"`
}

type apiLink struct {
	ID   string `json:"id"`
	Href string `json:"href"`
}

func (s *Server) metadata(c *gin.Context) {
	c.JSON(http.StatusOK, apiMetadata{
		Kind: "API", ID: "hyperfleet", Href: "/api/hyperfleet",
		Version: s.cfg.Version, BuildTime: s.cfg.BuildTime,
		Versions: []apiLink{{ID: "v1", Href: resource.BasePath}},
	})
}

func (s *Server) openapiPage(c *gin.Context) {
	c.Data(http.StatusOK, "text/html; charset=utf-8", openapiPage())
}
