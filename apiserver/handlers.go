package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/openapi"
	"github.com/hyperfleet/hyperfleet/apiserver/pagetoken"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/request"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

func openapiPage() []byte { return openapi.Page() }

// refFunc reads the resource a path addresses.
type refFunc func(c *gin.Context) lifecycle.Ref

// Pagination limits of the contract.
const (
	defaultPageSize = 20
	maxPageSize     = 100
)

type page struct{ number, size int }

// pageParams reads page and pageSize/size; out of range is a 400, never
// silently clamped.
func pageParams(c *gin.Context) (page, error) {
	p := page{number: 1, size: defaultPageSize}
	if v, ok := c.GetQuery("page"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, problem.InvalidParameter("page", v, "page must be an integer >= 1")
		}
		p.number = n
	}
	size, sizeSet := c.GetQuery("size")
	pageSize, pageSizeSet := c.GetQuery("pageSize")
	switch {
	case sizeSet && pageSizeSet && size != pageSize:
		return p, problem.InvalidParameter("pageSize", pageSize, "pageSize and size are the same setting; send one of them")
	case pageSizeSet:
		size, sizeSet = pageSize, true
	}
	if sizeSet {
		n, err := strconv.Atoi(size)
		name := "size"
		if pageSizeSet {
			name = "pageSize"
		}
		if err != nil || n < 1 || n > maxPageSize {
			return p, problem.InvalidParameter(name, size, "must be an integer from 1 to 100")
		}
		p.size = n
	}
	if p.number > 1_000_000 {
		return p, problem.InvalidParameter("page", p.number, "page is too large")
	}
	return p, nil
}

// tokenScope is what a list's continuation tokens are bound to: the
// query's fingerprint and its full order, worked out once per request.
type tokenScope struct {
	query string
	order []search.OrderTerm
}

func listParams(c *gin.Context, kind, parentID string) (lifecycle.ListParams, tokenScope, error) {
	pg, err := pageParams(c)
	if err != nil {
		return lifecycle.ListParams{}, tokenScope{}, err
	}
	order, err := search.ParseOrder(c.Query("orderBy"), c.Query("order"))
	if err != nil {
		param := "order"
		if c.Query("orderBy") != "" {
			param = "orderBy"
		}
		return lifecycle.ListParams{}, tokenScope{}, problem.InvalidParameter(param, c.Query(param), err.Error())
	}
	p := lifecycle.ListParams{Kind: kind, ParentID: parentID, Search: c.Query("search"), Order: order, Page: pg.number, Size: pg.size}
	full := search.WithTieBreak(order)
	scope := tokenScope{query: pagetoken.Query(kind, parentID, p.Search, full), order: full}
	if token, ok := c.GetQuery("pageToken"); ok {
		if _, paged := c.GetQuery("page"); paged {
			return p, scope, problem.InvalidParameter("page", c.Query("page"), "send page or pageToken, not both: a token already says where its page starts")
		}
		t, err := pagetoken.Decode(token, scope.query, scope.order)
		if err != nil {
			return p, scope, problem.InvalidParameter("pageToken", problem.Truncate(token, 200), "pageToken "+err.Error())
		}
		p.Page, p.After = t.Page, t.After
	}
	return p, scope, nil
}

func (s *Server) list(c *gin.Context, kind, listKind, parentID string) error {
	if watching, err := watchRequested(c); err != nil || watching {
		if err != nil {
			return err
		}
		return s.watch(c, kind, parentID)
	}
	params, scope, err := listParams(c, kind, parentID)
	if err != nil {
		return err
	}
	if s.hub != nil {
		// Read before the list: a watch from it misses nothing.
		c.Header(ResourceVersionHeader, strconv.FormatInt(s.hub.Last(), 10))
	}
	page, err := s.svc.List(c.Request.Context(), params)
	if err != nil {
		return err
	}
	l := resource.List[resource.Resource]{Kind: listKind, Page: params.Page, Size: len(page.Items), Total: page.Total, Items: page.Items}
	if page.Next != nil {
		if l.NextPageToken, err = pagetoken.Encode(scope.query, params.Page+1, scope.order, page.Next); err != nil {
			return problem.Internal(err)
		}
	}
	writeList(c, l)
	return nil
}

// writeList encodes a list a few items at a time, so a response never
// exists twice in memory (the items, and the whole document as one buffer):
// what a list costs is bounded by the page size times the largest resource.
func writeList[T any](c *gin.Context, l resource.List[T]) {
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
	w := c.Writer
	head, _ := json.Marshal(resource.List[T]{Kind: l.Kind, Page: l.Page, Size: l.Size, Total: l.Total, NextPageToken: l.NextPageToken})
	// head ends with "items":null}; the items replace the null.
	buf := append(bytes.TrimSuffix(head, []byte("null}")), '[')
	fields := projectionOf(c)
	var item []byte
	for i := range l.Items {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if fields == nil {
			buf, err = appendItem(buf, &l.Items[i])
		} else if item, err = appendItem(item[:0], &l.Items[i]); err == nil {
			buf, err = fields.Append(buf, item)
		}
		if err != nil {
			// The status is sent: cut the document short so the client
			// sees invalid JSON rather than a list that looks complete.
			_, _ = w.Write(buf)
			_ = c.Error(err)
			return
		}
		if len(buf) >= 32<<10 {
			_, _ = w.Write(buf)
			buf = buf[:0]
		}
	}
	_, _ = w.Write(append(buf, "]}"...))
}

// jsonAppender is a type that writes its own JSON without reflection
// (resource.Resource).
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

func appendItem(b []byte, item any) ([]byte, error) {
	if a, ok := item.(jsonAppender); ok {
		return a.AppendJSON(b)
	}
	out, err := json.Marshal(item)
	return append(b, out...), err
}

// writeResource answers with one resource, encoded without reflection,
// cut down to the request's fields= when it has one.
func writeResource(c *gin.Context, code int, r *resource.Resource) error {
	b, err := r.AppendJSON(make([]byte, 0, 2048))
	if err != nil {
		return problem.Internal(err)
	}
	if fields := projectionOf(c); fields != nil {
		if b, err = fields.Append(make([]byte, 0, len(b)), b); err != nil {
			return problem.Internal(err)
		}
	}
	c.Data(code, "application/json; charset=utf-8", b)
	return nil
}

// checkSpecSize refuses a spec over the configured limit.
func (s *Server) checkSpecSize(spec json.RawMessage) error {
	limit := s.cfg.SpecLimit
	if limit <= 0 {
		limit = request.DefaultSpecLimit
	}
	if int64(len(spec)) <= limit {
		return nil
	}
	return problem.Validation(problem.FieldError{Field: "spec", Constraint: fmt.Sprintf("maxBytes=%d", limit),
		Message: fmt.Sprintf("spec is %d bytes; the limit is %d bytes (the server's --spec-limit)", len(spec), limit)})
}

// checkStatusDataSize refuses a report whose data or metadata is over the
// configured limit.
func (s *Server) checkStatusDataSize(r *resource.StatusReport) error {
	limit := s.cfg.StatusDataLimit
	if limit <= 0 {
		limit = request.DefaultStatusDataLimit
	}
	var errs []problem.FieldError
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"data", r.Data}, {"metadata", r.Metadata}} {
		if int64(len(f.raw)) > limit {
			errs = append(errs, problem.FieldError{Field: f.name, Value: len(f.raw), Constraint: fmt.Sprintf("maxBytes=%d", limit),
				Message: fmt.Sprintf("%s is %d bytes; the limit is %d bytes (the server's --status-data-limit)", f.name, len(f.raw), limit)})
		}
	}
	if len(errs) > 0 {
		return problem.Validation(errs...)
	}
	return nil
}

// listKind lists a kind, across parents or, with parentParam, under the
// parent the path names.
func (s *Server) listKind(k resource.Kind, parentParam string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		parentID := ""
		if parentParam != "" {
			parentID = c.Param(parentParam)
		}
		return s.list(c, k.Kind, k.Kind+"List", parentID)
	}
}

// readBody reads the request body within the body limit, noting that it
// was read.
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	body, p := request.ReadBody(c.Request, s.cfg.BodyLimit)
	if p != nil {
		return nil, p
	}
	c.Set(bodyReadKey, true)
	return body, nil
}

func (s *Server) decode(c *gin.Context, dst any) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	if p := request.Decode(body, dst); p != nil {
		return p
	}
	return nil
}

// createKind creates a resource of a kind, under the parent the path names
// when parentParam is set.
func (s *Server) createKind(k resource.Kind, parentParam string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		var req lifecycle.CreateRequest
		if err := s.decode(c, &req); err != nil {
			return err
		}
		if err := s.checkSpecSize(req.Spec); err != nil {
			return err
		}
		parentID := ""
		if parentParam != "" {
			parentID = c.Param(parentParam)
		}
		r, err := s.svc.Create(c.Request.Context(), k.Kind, parentID, &req, identity(c))
		if err != nil {
			return err
		}
		c.Header("Location", r.Href)
		return writeResource(c, http.StatusCreated, r)
	}
}

func (s *Server) getResource(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		r, err := s.svc.Get(c.Request.Context(), ref(c))
		if err != nil {
			return err
		}
		return writeResource(c, http.StatusOK, r)
	}
}

func (s *Server) patchResource(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		var req lifecycle.PatchRequest
		if err := s.decode(c, &req); err != nil {
			return err
		}
		if err := s.checkSpecSize(req.Spec); err != nil {
			return err
		}
		r, err := s.svc.Patch(c.Request.Context(), ref(c), &req, identity(c))
		if err != nil {
			return err
		}
		return writeResource(c, http.StatusOK, r)
	}
}

func (s *Server) deleteResource(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		r, err := s.svc.Delete(c.Request.Context(), ref(c), identity(c))
		if err != nil {
			return err
		}
		return writeResource(c, http.StatusAccepted, r)
	}
}

func (s *Server) forceDelete(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		var req lifecycle.ForceDeleteRequest
		if err := s.decode(c, &req); err != nil {
			return err
		}
		if err := s.svc.ForceDelete(c.Request.Context(), ref(c), &req, identity(c)); err != nil {
			return err
		}
		c.Status(http.StatusNoContent)
		return nil
	}
}

// assignTenancy gives a resource stored before the tenancy file was in
// place, and its subtree, the tenancy the body holds (in the shape a
// resource returns it), checked as the tenancy file checks what tenants
// send. Only system callers get here (systemOnly).
func (s *Server) assignTenancy(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		var t map[string]string
		if err := s.decode(c, &t); err != nil {
			return err
		}
		if s.cfg.Tenancy == nil {
			return problem.New(http.StatusBadRequest, problem.CodeValidation,
				"the API runs without a tenancy file (--tenancy-file), so resources have no tenancy and none can be assigned")
		}
		if ps := s.cfg.Tenancy.CheckTenancy(t); len(ps) > 0 {
			errs := make([]problem.FieldError, 0, len(ps))
			for _, p := range ps {
				fe := problem.FieldError{Field: p.Field, Constraint: "tenancy", Message: p.Message + "; " + p.Fix}
				if v, ok := t[p.Field]; ok {
					fe.Value = problem.Truncate(v, 64)
				}
				errs = append(errs, fe)
			}
			return problem.Validation(errs...)
		}
		r, err := s.svc.AssignTenancy(c.Request.Context(), ref(c), t, identity(c))
		if err != nil {
			return err
		}
		return writeResource(c, http.StatusOK, r)
	}
}

func (s *Server) listStatuses(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		pg, err := pageParams(c)
		if err != nil {
			return err
		}
		if token, ok := c.GetQuery("pageToken"); ok {
			// A resource holds a few adapters' statuses: one page.
			return problem.InvalidParameter("pageToken", problem.Truncate(token, 200), "adapter status lists have no continuation tokens; use page")
		}
		items, total, err := s.svc.ListStatuses(c.Request.Context(), ref(c), pg.number, pg.size)
		if err != nil {
			return err
		}
		writeList(c, resource.List[resource.AdapterStatus]{Kind: "AdapterStatusList", Page: pg.number, Size: len(items), Total: total, Items: items})
		return nil
	}
}

func (s *Server) reportStatus(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		r := ref(c)
		body, err := s.readBody(c)
		if err != nil {
			return err
		}
		report, p := request.DecodeStatusReport(body)
		if p != nil {
			s.countReport(r.Kind, "", "rejected")
			return p
		}
		if err := s.checkStatusDataSize(report); err != nil {
			s.countReport(r.Kind, report.Adapter, "rejected")
			return err
		}
		res, err := s.svc.ReportStatus(c.Request.Context(), r, report)
		if err != nil {
			var pr *problem.Problem
			if errors.As(err, &pr) && pr.Status == http.StatusBadRequest {
				s.countReport(r.Kind, report.Adapter, "rejected")
			}
			return err
		}
		if res.Status == nil {
			s.countReport(r.Kind, report.Adapter, "discarded")
			c.Header("X-HyperFleet-Discarded", res.Discarded)
			c.Status(http.StatusNoContent)
			return nil
		}
		s.countReport(r.Kind, report.Adapter, "stored")
		c.JSON(http.StatusCreated, res.Status)
		return nil
	}
}

// countReport labels reports of adapters the operator did not name
// (required or optional) as unregistered, so adapter names sent by
// clients cannot grow the metric without bound.
func (s *Server) countReport(kind, adapter, outcome string) {
	if s.metrics == nil {
		return
	}
	label := "unregistered"
	if slices.Contains(s.svc.Registered(kind), adapter) || slices.Contains(s.svc.Optional(kind), adapter) {
		label = adapter
	}
	s.metrics.StatusReport(kind, label, outcome)
}
