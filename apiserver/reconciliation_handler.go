package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation"
	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation/guard"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
)

// ReconciliationSource is what GET <resource>/reconciliation reads
// besides the database: the workflow engine, and the relay's rate of
// rounds started (for when a waiting change will be handed over).
type ReconciliationSource struct {
	// Reader is the engine, behind a reconciliation.SharedReader in
	// production so callers of this endpoint cannot slow reconciling.
	Reader           reconciliation.Reader
	StartedPerSecond func() float64
	// UIURL is the Temporal Web UI's base URL and Namespace the
	// workflows' namespace, for system callers' links ("" UIURL: none).
	UIURL, Namespace string
}

// reconciliationSource is set once the workflow engine is attached.
type reconciliationSource = atomic.Pointer[ReconciliationSource]

// SetReconciliationSource attaches the workflow engine the reconciliation
// endpoint reads; without it the endpoint answers 503.
func (s *Server) SetReconciliationSource(src *ReconciliationSource) { s.recon.Store(src) }

// reconciliationOf answers why a resource is, or is not, Reconciled.
func (s *Server) reconciliationOf(ref refFunc) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		ctx := c.Request.Context()
		r, err := s.svc.Get(ctx, ref(c))
		if err != nil {
			return err
		}
		src := s.recon.Load()
		if src == nil {
			return problem.New(http.StatusServiceUnavailable, problem.CodeWorkflowEngine,
				"this API runs without a workflow engine, so no reconciliation can be read")
		}
		// The engine first: a read over the budget is refused before the
		// queue position is counted, so a refusal costs one row read. In a
		// burst the outbox is long and most callers are refused.
		wf, err := src.Reader.Read(ctx, r.Kind, r.ID)
		if err != nil {
			return readProblem(ctx, err)
		}
		var q reconciliation.Queue
		ahead, waiting, err := s.store.QueuePosition(ctx, r.ID)
		if err != nil {
			return err
		}
		if waiting {
			rate := 0.0
			if src.StartedPerSecond != nil {
				rate = src.StartedPerSecond()
			}
			q = reconciliation.Queue{Waiting: true, Ahead: ahead, StartIn: time.Duration(float64(ahead+1) / max(rate, 1.0/60) * float64(time.Second))}
		}
		rep := reconciliation.Build(r, wf, q, s.svc.Registered(r.Kind), s.svc.Optional(r.Kind))
		if wf.Found && s.systemCaller(ctx) {
			rep.Workflow = &reconciliation.WorkflowRef{ID: wf.ID}
			if src.UIURL != "" {
				rep.Workflow.UIURL = fmt.Sprintf("%s/namespaces/%s/workflows/%s", src.UIURL, url.PathEscape(src.Namespace), url.PathEscape(wf.ID))
			}
		}
		c.JSON(http.StatusOK, rep)
		return nil
	}
}

// readProblem is the 503 of a failed read of the workflow engine: this
// replica's budget of reads used up (retry after the wait the budget
// suggests: longer the more callers it refuses), the caller gone
// or out of time, or the engine not answering.
func readProblem(ctx context.Context, err error) *problem.Problem {
	var busy *guard.BusyError
	switch {
	case errors.As(err, &busy):
		return problem.New(http.StatusServiceUnavailable, problem.CodeReadBudget,
			"this API replica's budget of reads of the workflow engine a second is used up for now, so the reconciliation cannot be read; retry after Retry-After (every other route works)").
			WithCause(err).WithRetryAfter(busy.RetryAfter)
	case ctx.Err() != nil:
		return problem.New(http.StatusServiceUnavailable, problem.CodeRequestTimeout, "the request was cancelled or timed out").WithCause(err)
	}
	return problem.New(http.StatusServiceUnavailable, problem.CodeWorkflowEngine,
		"the workflow engine did not answer in time, so the reconciliation cannot be read now; every other route works (see Retry-After)").WithCause(err)
}

// systemCaller reports whether the request's caller is a system caller:
// with a tenancy file, one it names so; without one, there are no
// tenants to keep Temporal's names from.
func (s *Server) systemCaller(ctx context.Context) bool {
	if s.cfg.Tenancy == nil {
		return true
	}
	return tenancy.FromContext(ctx).System
}
