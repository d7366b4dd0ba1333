// Package relay hands the API's outbox to Temporal: every row written in
// the same transaction as a generation bump becomes a SignalWithStart of the
// resource's reconcile workflow, and the row is deleted only once Temporal
// has accepted it. While Temporal is unreachable the rows wait (writes keep
// succeeding) and the relay retries with backoff; at start-up it makes sure
// every live resource has a running workflow.
//
// Delivery is at least once: a row may be delivered twice (a crash between
// the signal and the delete, two API replicas), which the workflow absorbs
// because a signal only ever raises the generation it knows.
package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Config wires a relay.
type Config struct {
	Store    store.Store
	Temporal client.Client
	// Registered maps a kind to the adapters its workflows run.
	Registered map[string][]string
	// Options tune the workflows it starts (and are re-sent with every
	// signal, so running workflows pick up a change).
	Options reconcile.Options
	// Batch is how many outbox rows one pass reads (default 500).
	Batch int
	// Concurrency bounds the calls to Temporal in flight (default 16).
	Concurrency int
	// Sweep re-reads the outbox this often even without a nudge: rows left
	// by an API replica that crashed before handing them over (default 1m;
	// negative disables). It is a safety net, not the delivery path.
	Sweep time.Duration
	// MaxBackoff caps the wait between attempts while Temporal is
	// unreachable (default 30s).
	MaxBackoff time.Duration
	// CallTimeout bounds one call to Temporal (default 10s).
	CallTimeout time.Duration
	Registerer  prometheus.Registerer
	Logger      zerolog.Logger
}

// Relay delivers the outbox.
type Relay struct {
	cfg     Config
	nudge   chan struct{}
	metrics relayMetrics
	// lastErr is the last delivery failure, cleared by a success.
	lastErr atomic.Pointer[error]
}

// New builds a relay; Run starts it.
func New(cfg Config) *Relay {
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Sweep == 0 {
		cfg.Sweep = time.Minute
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Second
	}
	cfg.Options = cfg.Options.WithDefaults()
	r := &Relay{cfg: cfg, nudge: make(chan struct{}, 1), metrics: newMetrics(cfg.Registerer)}
	return r
}

// Nudge asks for a pass now; it never blocks. The lifecycle service calls it
// after every commit that wrote to the outbox.
func (r *Relay) Nudge() {
	select {
	case r.nudge <- struct{}{}:
	default:
	}
}

// Check reports whether Temporal answers and the outbox is being handed
// over: the "workflow-engine" entry of /readyz.
func (r *Relay) Check(ctx context.Context) error {
	if _, err := r.cfg.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	if err := r.lastErr.Load(); err != nil {
		return fmt.Errorf("outbox hand-off failing (retrying): %w", *err)
	}
	return nil
}

// Run delivers until ctx ends: first whatever is pending, then on every
// nudge. The start-up pass over live resources runs alongside.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.retry(ctx, "ensure every live resource has a reconcile workflow", r.Resync)
	}()
	defer wg.Wait()

	var sweep <-chan time.Time
	if r.cfg.Sweep > 0 {
		t := time.NewTicker(r.cfg.Sweep)
		defer t.Stop()
		sweep = t.C
	}
	backoff := time.Duration(0)
	for {
		n, err := r.Drain(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			backoff = r.nextBackoff(backoff)
			r.cfg.Logger.Warn().Err(err).Dur("retry_in", backoff).Msg("outbox hand-off to Temporal failed; API writes continue and will be handed over when it is back")
			if !sleep(ctx, backoff) {
				return nil
			}
			continue
		case backoff > 0:
			r.cfg.Logger.Info().Msg("outbox hand-off to Temporal resumed")
			backoff = 0
		}
		if n == r.cfg.Batch {
			continue // more rows are waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.nudge:
		case <-sweep:
		}
	}
}

func (r *Relay) nextBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return 500 * time.Millisecond
	}
	return min(2*d, r.cfg.MaxBackoff)
}

// retry runs fn until it succeeds or ctx ends, backing off between attempts.
func (r *Relay) retry(ctx context.Context, what string, fn func(context.Context) error) {
	backoff := time.Duration(0)
	for {
		err := fn(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		backoff = r.nextBackoff(backoff)
		r.cfg.Logger.Warn().Err(err).Dur("retry_in", backoff).Msg(what)
		if !sleep(ctx, backoff) {
			return
		}
	}
}

// Drain hands over one batch of pending rows and returns how many it read.
// Rows of one resource are folded into one call at their newest
// generation; rows whose call failed stay for the next pass.
func (r *Relay) Drain(ctx context.Context) (int, error) {
	rows, err := r.cfg.Store.PendingOutbox(ctx, r.cfg.Batch)
	if err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	groups := Group(rows)
	var (
		mu    sync.Mutex
		acked []int64
		errs  []error
	)
	r.forEach(ctx, len(groups), func(ctx context.Context, i int) {
		g := groups[i]
		err := r.deliver(ctx, g)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s generation %d: %w", g.Ref.Kind, g.Ref.ID, g.Generation, err))
			r.metrics.delivered.WithLabelValues("error").Inc()
			return
		}
		acked = append(acked, g.RowIDs...)
		r.metrics.delivered.WithLabelValues("ok").Inc()
		r.metrics.handoff.Observe(time.Since(g.Oldest).Seconds())
	})
	if len(acked) > 0 {
		// Acknowledged even when the context ended: Temporal has them.
		if err := r.cfg.Store.AckOutbox(context.WithoutCancel(ctx), acked...); err != nil {
			errs = append(errs, fmt.Errorf("acknowledge delivered outbox rows: %w", err))
		}
	}
	if len(errs) > 0 {
		err := errors.Join(errs...)
		r.lastErr.Store(&err)
		return len(rows), err
	}
	r.lastErr.Store(nil)
	return len(rows), nil
}

// Resync makes sure every live resource has a running workflow that knows
// its current generation and the current adapter list: after a Temporal
// outage that lost state, a registration change, or a first start against
// an existing database.
func (r *Relay) Resync(ctx context.Context) error {
	count := 0
	for _, kind := range []string{resource.KindCluster, resource.KindNodePool} {
		after := ""
		for {
			page, err := r.cfg.Store.LiveResources(ctx, kind, after, r.cfg.Batch)
			if err != nil {
				return fmt.Errorf("list %s resources: %w", kind, err)
			}
			if len(page) == 0 {
				break
			}
			var (
				mu   sync.Mutex
				errs []error
			)
			r.forEach(ctx, len(page), func(ctx context.Context, i int) {
				res := &page[i]
				g := Delivery{Ref: refOf(res), Generation: res.Generation, Reason: reconcile.ReasonResync}
				if err := r.deliver(ctx, g); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s %s: %w", kind, res.ID, err))
					mu.Unlock()
				}
			})
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			count += len(page)
			after = page[len(page)-1].ID
		}
	}
	r.cfg.Logger.Info().Int("resources", count).Msg("every live resource has a reconcile workflow")
	return nil
}

// forEach runs fn for 0..n-1 with at most Concurrency in flight.
func (r *Relay) forEach(ctx context.Context, n int, fn func(ctx context.Context, i int)) {
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(ctx, i)
		}()
	}
	wg.Wait()
}

// deliver makes one call to Temporal for one resource.
func (r *Relay) deliver(ctx context.Context, d Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	log := r.cfg.Logger.With().Str("kind", d.Ref.Kind).Str("resource_id", d.Ref.ID).Int64("generation", d.Generation).Str("reason", d.Reason).Logger()
	if d.Reason == reconcile.ReasonRemoved {
		// A removed resource must not get a new workflow: only tell a
		// running one (and a deleting cluster waiting for this node pool).
		if err := r.signal(ctx, d.Ref, reconcile.Signal{Generation: d.Generation, Reason: reconcile.ReasonRemoved}); err != nil {
			return err
		}
		if d.Ref.ParentID != "" {
			parent := reconcile.Ref{Kind: resource.KindCluster, ID: d.Ref.ParentID}
			if err := r.signal(ctx, parent, reconcile.Signal{Reason: reconcile.ReasonChildRemoved}); err != nil {
				return err
			}
		}
		log.Debug().Msg("removal handed to the workflow")
		return nil
	}
	adapters := r.cfg.Registered[d.Ref.Kind]
	if len(adapters) == 0 {
		log.Debug().Msg("no adapters registered for this kind: nothing to reconcile")
		return nil
	}
	opts := r.cfg.Options
	sig := reconcile.Signal{Generation: d.Generation, Reason: d.Reason, Adapters: adapters, Options: &opts}
	in := reconcile.Input{Ref: d.Ref, Generation: d.Generation, Adapters: adapters, Options: opts}
	start := client.StartWorkflowOptions{
		ID:        reconcile.WorkflowID(d.Ref.Kind, d.Ref.ID),
		TaskQueue: reconcile.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			reconcile.AttrKind.ValueSet(d.Ref.Kind), reconcile.AttrResourceID.ValueSet(d.Ref.ID),
			reconcile.AttrGeneration.ValueSet(d.Generation), reconcile.AttrReconciled.ValueSet(false)),
	}
	if _, err := r.cfg.Temporal.SignalWithStartWorkflow(ctx, start.ID, reconcile.SignalName, sig, start, reconcile.WorkflowName, in); err != nil {
		return fmt.Errorf("signal-with-start %s: %w", start.ID, err)
	}
	log.Debug().Msg("reconcile requested")
	return nil
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

func refOf(res *resource.Resource) reconcile.Ref {
	ref := reconcile.Ref{Kind: res.Kind, ID: res.ID}
	if res.OwnerReferences != nil {
		ref.ParentID = res.OwnerReferences.ID
	}
	return ref
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
