package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Drain hands over one batch of pending rows and returns how many it read.
// Rows of one resource are folded into one call at their newest
// generation; rows whose call failed stay for the next pass. With
// admission control, a batch is at most what the window leaves free.
func (r *Relay) Drain(ctx context.Context) (int, error) {
	n, _, err := r.drain(ctx)
	return n, err
}

// drain is Drain, also returning how many rows it was allowed to read.
func (r *Relay) drain(ctx context.Context) (n, limit int, err error) {
	limit = r.claim
	if r.admit != nil {
		free, err := r.admit.free(ctx)
		if err != nil {
			err = fmt.Errorf("count the rounds in flight: %w", err)
			r.lastErr.Store(&err)
			return 0, 0, err
		}
		if limit = min(limit, free); limit == 0 {
			return 0, 0, nil
		}
	}
	var errs []error
	n, err = r.cfg.Store.ClaimOutbox(ctx, limit, func(ctx context.Context, rows []store.OutboxEntry) []int64 {
		var acked []int64
		acked, errs = r.deliverAll(ctx, rows)
		return acked
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("read or acknowledge the outbox: %w", err))
	}
	if len(errs) > 0 {
		err := errors.Join(errs...)
		r.lastErr.Store(&err)
		return n, limit, err
	}
	r.lastErr.Store(nil)
	return n, limit, nil
}

// deliverAll hands rows to Temporal, one call per resource at its newest
// generation, and returns the ids of the rows Temporal accepted.
func (r *Relay) deliverAll(ctx context.Context, rows []store.OutboxEntry) ([]int64, []error) {
	groups := Group(rows)
	var (
		mu        sync.Mutex
		acked     []int64
		errs      []error
		delivered []Delivery
	)
	r.forEach(ctx, len(groups), func(ctx context.Context, i int) {
		g := groups[i]
		if r.limit != nil {
			if err := r.limit.Wait(ctx); err != nil {
				return // ended: the row stays for the next pass
			}
		}
		err := r.deliver(ctx, g)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s generation %d: %w", g.Ref.Kind, g.Ref.ID, g.Generation, err))
			r.metrics.delivered.WithLabelValues("error").Inc()
			return
		}
		acked = append(acked, g.RowIDs...)
		delivered = append(delivered, g)
		r.metrics.delivered.WithLabelValues("ok").Inc()
		r.metrics.handoff.Observe(time.Since(g.Oldest).Seconds())
	})
	if r.admit != nil {
		// Counted even when ctx ended: Temporal has these rounds. A
		// failure to count them leaves them uncounted, not lost.
		if err := r.admit.admitted(context.WithoutCancel(ctx), delivered); err != nil {
			errs = append(errs, err)
		}
	}
	return acked, errs
}

// deliver makes one call to Temporal for one resource.
func (r *Relay) deliver(ctx context.Context, d Delivery) (err error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	// The outbox and the start-up pass know kind and ids; the table adds
	// the parent's kind and the path the workflow's adapters call.
	d.Ref = reconcile.RefOf(r.cfg.Kinds, d.Ref.Kind, d.Ref.ID, d.Ref.ParentID)
	if r.cfg.Tracer != nil {
		// The Temporal client's interceptor makes the start or signal a
		// child of this span and carries it into the workflow's headers.
		var span trace.Span
		ctx, span = tracing.Tracer(r.cfg.Tracer).Start(tracing.WithTraceParent(ctx, d.TraceParent), "outbox.deliver",
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(append(tracing.Resource(d.Ref.Kind, d.Ref.ID, d.Generation),
				attribute.String("hyperfleet.outbox.reason", string(d.Reason)), attribute.Int("hyperfleet.outbox.rows", len(d.RowIDs)))...))
		defer func() { tracing.Fail(span, err); span.End() }()
	}
	log := r.cfg.Logger.With().Str("kind", d.Ref.Kind).Str("resource_id", d.Ref.ID).Int64("generation", d.Generation).Str("reason", string(d.Reason)).Logger()
	if d.Reason == reconcile.ReasonRemoved {
		// A removed resource must not get a new workflow: only tell a
		// running one (and a deleting cluster waiting for this node pool).
		if err := r.signal(ctx, d.Ref, reconcile.Signal{Generation: d.Generation, Reason: reconcile.ReasonRemoved}); err != nil {
			return err
		}
		if parentKind := r.parentKind(d.Ref.Kind); d.Ref.ParentID != "" && parentKind != "" {
			// Only a deleting parent waits for its children; any other
			// needs nothing from a child's removal.
			parent, err := r.cfg.Store.GetResource(ctx, parentKind, d.Ref.ParentID)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return fmt.Errorf("read the parent of %s %s: %w", d.Ref.Kind, d.Ref.ID, err)
			case parent.DeletedTime != nil:
				ref := reconcile.Ref{Kind: parentKind, ID: d.Ref.ParentID}
				if err := r.signal(ctx, ref, reconcile.Signal{Reason: reconcile.ReasonChildRemoved}); err != nil {
					return err
				}
			}
		}
		log.Debug().Msg("removal handed to the workflow")
		return nil
	}
	adapters, optional := r.cfg.Registered[d.Ref.Kind], r.cfg.Optional[d.Ref.Kind]
	if len(adapters) == 0 && len(optional) == 0 {
		log.Debug().Msg("no adapters registered for this kind: nothing to reconcile")
		return nil
	}
	// Both lists go out non-null: a signal's null list means "unchanged",
	// and an emptied list must reach running workflows too.
	if adapters == nil {
		adapters = []string{}
	}
	if optional == nil {
		optional = []string{}
	}
	opts := r.cfg.Options
	sig := reconcile.Signal{Generation: d.Generation, Reason: d.Reason, Adapters: adapters, Optional: optional, Options: &opts}
	in := reconcile.NewInput(d.Ref, d.Generation, adapters, opts)
	in.Tenant = d.Tenant
	if len(optional) > 0 {
		in.Optional = optional
	}
	start := client.StartWorkflowOptions{
		ID:                    reconcile.WorkflowID(d.Ref.Kind, d.Ref.ID),
		TaskQueue:             reconcile.TaskQueue,
		TypedSearchAttributes: reconcile.TenantStartAttributes(d.Ref, d.Generation, d.Tenant),
	}
	began := time.Now()
	_, err = r.cfg.Temporal.SignalWithStartWorkflow(ctx, start.ID, reconcile.SignalName, sig, start, reconcile.WorkflowName, in)
	if r.admit != nil {
		r.admit.handoff(time.Since(began), err)
	}
	if err != nil {
		return fmt.Errorf("signal-with-start %s: %w", start.ID, err)
	}
	log.Debug().Msg("reconcile requested")
	return nil
}

// parentKind is the kind of a child kind's parent.
func (r *Relay) parentKind(kind string) string {
	if k, ok := r.cfg.Kinds.Get(kind); ok {
		return k.ParentKind
	}
	// A kind dropped from the table since its row was written: no parent
	// workflow of a known kind can be waiting for it.
	return ""
}

// signal tells a running workflow; a workflow that is not running has
// nothing to be told.
func (r *Relay) signal(ctx context.Context, ref reconcile.Ref, s reconcile.Signal) error {
	id := reconcile.WorkflowID(ref.Kind, ref.ID)
	err := r.cfg.Temporal.SignalWorkflow(ctx, id, "", reconcile.SignalName, s)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("signal %s: %w", id, err)
	}
	return nil
}
