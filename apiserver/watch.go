package apiserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/projection"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
)

// ResourceVersionHeader carries, on a list, the resource version a watch
// started from it misses nothing after (docs/contract.md, "Watch").
const ResourceVersionHeader = "X-HyperFleet-Resource-Version"

// watchWriteTimeout bounds one write of a watch: a client that reads
// nothing for this long is disconnected rather than holding the handler.
const watchWriteTimeout = 30 * time.Second

// watchRequested reads a list's watch parameter.
func watchRequested(c *gin.Context) (bool, error) {
	v, ok := c.GetQuery("watch")
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, problem.InvalidParameter("watch", problem.Truncate(v, 200), "watch must be true or false")
	}
	return b, nil
}

// listOnly are the list parameters a watch refuses: it streams every
// change it selects in the order they happen.
var listOnly = []string{"page", "size", "pageSize", "pageToken", "orderBy", "order"}

// resumeVersion is where a watch resumes: resourceVersion, else the
// Last-Event-ID a reconnecting EventSource sends; -1 for neither.
func resumeVersion(c *gin.Context) (int64, error) {
	param, v := "resourceVersion", c.Query("resourceVersion")
	if _, ok := c.GetQuery("resourceVersion"); !ok {
		param, v = "Last-Event-ID", c.GetHeader("Last-Event-ID")
		if v == "" {
			return -1, nil
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, problem.InvalidParameter(param, problem.Truncate(v, 200),
			"a resource version is a non-negative integer, as a list's "+ResourceVersionHeader+" header or a watch event's resource_version gives it")
	}
	return n, nil
}

// watch streams the changes of a list (kind "" for every kind, parentID
// for one parent's children) as Server-Sent Events.
func (s *Server) watch(c *gin.Context, kind, parentID string) error {
	if s.hub == nil {
		return problem.InvalidParameter("watch", "true",
			"this server does not serve watches: its API replicas run with --watch=false (HYPERFLEET_WATCH=false); drop that setting on every replica to serve them")
	}
	for _, p := range listOnly {
		if v, ok := c.GetQuery(p); ok {
			return problem.InvalidParameter(p, problem.Truncate(v, 200),
				"a watch streams each change as it happens, in that order; page, size, pageSize, pageToken, orderBy and order are for lists")
		}
	}
	from, err := resumeVersion(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	where, err := s.svc.WatchFilter(ctx, kind, parentID, c.Query("search"))
	if err != nil {
		return err
	}
	if from >= 0 {
		w, err := s.store.ChangeWindow(ctx)
		if err != nil {
			return problem.Internal(err)
		}
		if !w.Resumable(from) {
			return problem.Newf(http.StatusGone, problem.CodeWatchExpired,
				"resource version %d is not in the change history this server keeps (versions %d to %d); list again and watch from the list's %s header",
				from, max(w.Oldest-1, 0), w.Newest, ResourceVersionHeader).
				WithErrors(problem.FieldError{Field: "resourceVersion", Value: from, Constraint: "retained", Message: "older than the retained history, or not one of its versions"})
		}
	}
	w, start, err := s.hub.Subscribe(ctx, kind, parentID)
	if err != nil {
		return watchRefusal(err)
	}
	defer w.Close()
	if from < 0 {
		// Without a version a watch starts at the log's newest change,
		// not at the hub's position: the hub reads the log after a
		// wake-up (on PostgreSQL, once the change is numbered after its
		// commit), so it may not have read a change whose write has
		// already answered. Read after Subscribe: a change numbered
		// meanwhile reaches the watcher and is skipped as not newer.
		win, err := s.store.ChangeWindow(ctx)
		if err != nil {
			return problem.Internal(err)
		}
		from = max(win.Newest, start)
	}
	rc := http.NewResponseController(c.Writer)
	// The server's read timeout would end the stream: the connection's
	// background read fails at the deadline and cancels the request.
	_ = rc.SetReadDeadline(time.Time{})
	c.Header("Content-Type", watch.ContentType)
	c.Header("Cache-Control", "no-cache")
	c.Header("X-Accel-Buffering", "no") // proxies that buffer (nginx) pass events on at once
	c.Status(http.StatusOK)
	fields := projectionOf(c)
	err = s.hub.Serve(ctx, w, start, watch.Stream{
		Kind: kind, ParentID: parentID, Where: where, From: from, Path: problem.Truncate(c.Request.URL.Path, maxEchoedPath),
		Project:    project(fields),
		ProjectKey: c.Query("fields"),
		Send: func(b []byte) error {
			_ = rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
			if _, err := c.Writer.Write(b); err != nil {
				return err
			}
			return rc.Flush()
		},
	})
	if err != nil && ctx.Err() == nil {
		// The status is sent: the stream just ends, and the client
		// resumes from the last version it received.
		s.requestLog(c).Warn().Err(err).Msg("watch ended by an error")
	}
	return nil
}

// project is a watch's cut of each change to fields= (nil: whole).
func project(fields *projection.Projection) func([]byte) ([]byte, error) {
	if fields == nil {
		return nil
	}
	return func(b []byte) ([]byte, error) { return fields.Append(make([]byte, 0, len(b)), b) }
}

// watchRender encodes a change's resource as a GET returns it: the hub
// renders each change once, for every watcher it goes to.
func watchRender(svc *lifecycle.Service) func(context.Context, *store.Change) ([]byte, error) {
	return func(ctx context.Context, ch *store.Change) ([]byte, error) {
		r := ch.Resource
		if ch.Type != store.ChangeDeleted {
			r.Status.Conditions = slices.Clone(r.Status.Conditions)
			if err := svc.Present(ctx, &r); err != nil {
				return nil, err
			}
		}
		return r.AppendJSON(make([]byte, 0, 2048))
	}
}

// watchRefusal answers a watch the hub refused.
func watchRefusal(err error) error {
	var ce *watch.CapError
	switch {
	case errors.As(err, &ce) && ce.PerTenant:
		return problem.New(http.StatusTooManyRequests, problem.CodeWatchTenantLimit, ce.Error())
	case errors.As(err, &ce):
		return problem.New(http.StatusServiceUnavailable, problem.CodeWatchCapacity, ce.Error()).WithRetryAfter(10 * time.Second)
	case errors.Is(err, watch.ErrClosed):
		return problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, "the server is shutting down; watch on another replica")
	}
	return problem.Internal(err)
}
