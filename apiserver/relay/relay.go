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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/time/rate"

	"github.com/hyperfleet/hyperfleet/apiserver/admission"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Store is what the relay reads and writes: the outbox it hands over, the
// admissions it counts, the resources its start-up pass resends, and the
// fingerprint setting of that pass. It never writes a resource.
type Store interface {
	store.Outbox
	store.Admissions
	store.Resources
	store.Settings
}

// Config wires a relay.
type Config struct {
	Store    Store
	Temporal client.Client
	// Registered maps a kind to the adapters its workflows run and wait
	// for; Optional to the adapters they run without waiting for them.
	Registered map[string][]string
	Optional   map[string][]string
	// Kinds places each kind under its parent; the default kinds when nil.
	Kinds *resource.Kinds
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
	// ResyncRate bounds the signals per second of the start-up pass that
	// tells every workflow about a changed adapter registration or changed
	// options (default 200), so a fleet-wide change does not flood
	// Temporal.
	ResyncRate float64
	// Admission tunes the admission control that keeps the rounds in
	// flight across the fleet within what Temporal keeps up with (package
	// admission): changes above it wait in the outbox, where writes keep
	// succeeding. Its defaults need no tuning.
	Admission admission.Config
	// NoAdmission turns admission control off: every change is handed
	// over at once, however many are in flight (tests of the hand-off
	// alone).
	NoAdmission bool
	// HandoffRate bounds this relay's hand-offs a second (0: none), a
	// hard cap on top of admission control. A burst of creates handed
	// over faster than Temporal can run their rounds overloads its
	// history service; past about a second a dispatch is lost and waits
	// out its timeout, and the retries feed the overload
	// (docs/benchmarks.md, "The production shape").
	HandoffRate float64
	// Tracer records each hand-off as a span, the child of the request
	// that wrote the row (its stored traceparent); nil: no spans.
	Tracer     trace.TracerProvider
	Registerer prometheus.Registerer
	Logger     zerolog.Logger
}

// Relay delivers the outbox.
type Relay struct {
	cfg     Config
	limit   *rate.Limiter // nil: hand-offs are not rate limited
	claim   int           // rows one pass takes from the outbox
	nudge   chan struct{}
	metrics relayMetrics
	// admit is the admission control; nil when off.
	admit *admitter
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
	if cfg.ResyncRate <= 0 {
		cfg.ResyncRate = 200
	}
	if cfg.Kinds == nil {
		cfg.Kinds = resource.Defaults()
	}
	cfg.Options = cfg.Options.WithDefaults()
	r := &Relay{cfg: cfg, nudge: make(chan struct{}, 1), metrics: newMetrics(cfg.Registerer)}
	if !cfg.NoAdmission {
		r.admit = newAdmitter(cfg.Store, cfg.Admission, cfg.Registerer)
	}
	r.claim = cfg.Batch
	if cfg.HandoffRate > 0 {
		r.limit = rate.NewLimiter(rate.Limit(cfg.HandoffRate), max(1, int(cfg.HandoffRate)))
		// About ten seconds of hand-offs a pass: on PostgreSQL a pass holds
		// its rows from the other replicas, which should not wait minutes
		// behind a slow one.
		r.claim = min(cfg.Batch, max(1, int(math.Ceil(cfg.HandoffRate*10))))
	}
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
	if r.admit != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.admissionLoop(ctx)
		}()
	}
	defer wg.Wait()

	var sweep <-chan time.Time
	if r.cfg.Sweep > 0 {
		t := time.NewTicker(r.cfg.Sweep)
		defer t.Stop()
		sweep = t.C
	}
	backoff := time.Duration(0)
	for {
		n, limit, err := r.drain(ctx)
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
		if n == r.claim {
			continue // more rows are waiting
		}
		// The window of rounds in flight was full, or filled: rows may
		// wait beyond it, and the window frees as rounds start anywhere
		// in the fleet, which no nudge reports. Look again shortly.
		var windowFull <-chan time.Time
		if limit < r.claim && n == limit {
			windowFull = time.After(admissionPoll)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.nudge:
		case <-sweep:
		case <-windowFull:
		}
	}
}

// admissionPoll is how often a relay whose window is full looks whether
// rounds started: short enough not to leave the window idle, long enough
// to cost nothing (one count of a small table).
const admissionPoll = 200 * time.Millisecond

// admissionLoop moves the admission window once a second.
func (r *Relay) admissionLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.admit.tick(ctx, func(s admission.Snapshot, pending, inFlight int, rate float64) {
			r.cfg.Logger.Info().Int("waiting", pending).Int("window", s.Window).Int("in_flight", inFlight).
				Float64("started_per_second", math.Round(rate*10)/10).Str("expected_drain", drainTime(pending, rate).String()).
				Str("congestion", s.Congested).Str("handoff_p90", s.HandoffP90.String()).Str("round_start_median", s.RoundMedian.String()).
				Str("round_start_baseline", s.Baseline.String()).Msg("admission control: changes wait in the outbox for Temporal to keep up")
		})
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			r.cfg.Logger.Warn().Err(err).Msg("admission control cannot read its counts; the window stays as it is")
		case err == nil:
			failing = false
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

// fingerprintSetting stores what the workflows were last told: the
// adapter registration and the workflow options.
const fingerprintSetting = "relay_fingerprint"

// Resync makes sure every live resource has a running workflow that knows
// the current adapter list and options: after a Temporal outage that lost
// state, a registration change, or a first start against an existing
// database. When neither the registration nor the options changed since the
// last pass (a stored fingerprint says so), only resources without a
// running workflow are handed over, so an ordinary restart sends no
// per-resource signal; otherwise every workflow is signalled, at most
// ResyncRate a second, and the fingerprint is stored once all have been.
func (r *Relay) Resync(ctx context.Context) error {
	want, err := r.fingerprint()
	if err != nil {
		return err
	}
	have, ok, err := r.cfg.Store.GetSetting(ctx, fingerprintSetting)
	if err != nil {
		return fmt.Errorf("read the relay fingerprint: %w", err)
	}
	if ok && have == want {
		n, err := r.startMissing(ctx)
		if err == nil {
			r.cfg.Logger.Info().Int("started", n).Msg("registration and options unchanged: handed over only resources without a running workflow")
		}
		return err
	}
	n, err := r.resyncAll(ctx)
	if err != nil {
		return err
	}
	if err := r.cfg.Store.PutSetting(ctx, fingerprintSetting, want); err != nil {
		return fmt.Errorf("store the relay fingerprint: %w", err)
	}
	r.cfg.Logger.Info().Int("resources", n).Msg("every live resource's workflow knows the current adapters and options")
	return nil
}

// fingerprint digests what every workflow must know.
func (r *Relay) fingerprint() (string, error) {
	kinds := make([]string, 0, len(r.cfg.Registered))
	for k := range r.cfg.Registered {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	// Format is the digest's own format, fixed at 2 (the value every
	// stored fingerprint has, under the key "Protocol"): a new workflow
	// release changes nothing a running workflow must be told (worker
	// versioning moves it), so releasing one sends no signal to the
	// fleet. Optional joins the digest only when some kind has optional
	// adapters, so a deployment without any keeps its stored fingerprint
	// and an upgrade signals no one.
	doc := struct {
		Format     int `json:"Protocol"`
		Kinds      []string
		Registered map[string][]string
		Optional   map[string][]string `json:",omitempty"`
		Options    reconcile.Options
	}{2, kinds, map[string][]string{}, map[string][]string{}, r.cfg.Options}
	for _, k := range kinds {
		doc.Registered[k] = sortedCopy(r.cfg.Registered[k])
	}
	for k, names := range r.cfg.Optional {
		if len(names) > 0 {
			doc.Optional[k] = sortedCopy(names)
		}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// reconciledKinds are the kinds that have adapters, required or
// optional, in a stable order.
func (r *Relay) reconciledKinds() []string {
	var kinds []string
	for _, set := range []map[string][]string{r.cfg.Registered, r.cfg.Optional} {
		for k, adapters := range set {
			if len(adapters) > 0 && !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	slices.Sort(kinds)
	return kinds
}

// eachLive calls fn for every page of live resources of the reconciled
// kinds, leaving out those whose change waits in the outbox: its hand-off
// will tell the workflow, through admission control, so the start-up pass
// does not start a burst's workflows all at once.
func (r *Relay) eachLive(ctx context.Context, fn func(kind string, page []store.LiveRef) error) error {
	for _, kind := range r.reconciledKinds() {
		after := ""
		for {
			page, err := r.cfg.Store.LiveRefs(ctx, kind, after, r.cfg.Batch)
			if err != nil {
				return fmt.Errorf("list %s resources: %w", kind, err)
			}
			if len(page) == 0 {
				break
			}
			after = page[len(page)-1].ID
			if page, err = r.notQueued(ctx, page); err != nil {
				return err
			}
			if err := fn(kind, page); err != nil {
				return err
			}
		}
	}
	return nil
}

// notQueued drops the resources whose change waits in the outbox.
func (r *Relay) notQueued(ctx context.Context, page []store.LiveRef) ([]store.LiveRef, error) {
	ids := make([]string, len(page))
	for i := range page {
		ids[i] = page[i].ID
	}
	queued, err := r.cfg.Store.Queued(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	return slices.DeleteFunc(page, func(ref store.LiveRef) bool { return queued[ref.ID] }), nil
}

// resyncAll signals every live resource's workflow (starting the missing
// ones), rate-limited.
func (r *Relay) resyncAll(ctx context.Context) (int, error) {
	limit := time.NewTicker(time.Duration(float64(time.Second) / r.cfg.ResyncRate))
	defer limit.Stop()
	count := 0
	err := r.eachLive(ctx, func(kind string, page []store.LiveRef) error {
		var (
			mu   sync.Mutex
			errs []error
		)
		r.forEach(ctx, len(page), func(ctx context.Context, i int) {
			select {
			case <-ctx.Done():
				return
			case <-limit.C:
			}
			if err := r.deliver(ctx, resyncOf(kind, page[i])); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s %s: %w", kind, page[i].ID, err))
				mu.Unlock()
			}
		})
		count += len(page)
		return errors.Join(errs...)
	})
	return count, err
}

// startMissing hands over the live resources that have no running workflow
// (Temporal lost its state, or a hand-off was lost), found by comparing the
// live resources with Temporal's list of running reconcile workflows. A
// workflow started a moment ago may not be listed yet: it only gets a
// resync signal, which runs no round.
func (r *Relay) startMissing(ctx context.Context) (int, error) {
	// As many running workflows as live resources: none is missing (a
	// removed resource's workflow ends itself), and the fleet need not be
	// listed. Otherwise compare the two lists.
	if same, err := r.countsMatch(ctx); err != nil || same {
		return 0, err
	}
	running, err := r.runningWorkflows(ctx)
	if err != nil {
		return 0, err
	}
	started := 0
	err = r.eachLive(ctx, func(kind string, page []store.LiveRef) error {
		var missing []store.LiveRef
		for _, ref := range page {
			if !running[reconcile.WorkflowID(kind, ref.ID)] {
				missing = append(missing, ref)
			}
		}
		var (
			mu   sync.Mutex
			errs []error
		)
		r.forEach(ctx, len(missing), func(ctx context.Context, i int) {
			if err := r.deliver(ctx, resyncOf(kind, missing[i])); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s %s: %w", kind, missing[i].ID, err))
				mu.Unlock()
			}
		})
		started += len(missing)
		return errors.Join(errs...)
	})
	return started, err
}

func (r *Relay) countsMatch(ctx context.Context) (bool, error) {
	var live int64
	for _, kind := range r.reconciledKinds() {
		n, err := r.cfg.Store.CountResources(ctx, kind)
		if err != nil {
			return false, err
		}
		live += n
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	resp, err := r.cfg.Temporal.CountWorkflow(cctx, &workflowservice.CountWorkflowExecutionsRequest{Query: runningQuery})
	if err != nil {
		return false, fmt.Errorf("count running reconcile workflows: %w", err)
	}
	return resp.GetCount() == live, nil
}

var runningQuery = fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", reconcile.WorkflowName)

// runningWorkflows lists the ids of every running reconcile workflow.
func (r *Relay) runningWorkflows(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	var token []byte
	for {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		resp, err := r.cfg.Temporal.ListWorkflow(cctx, &workflowservice.ListWorkflowExecutionsRequest{Query: runningQuery, PageSize: 1000, NextPageToken: token})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list running reconcile workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			out[e.GetExecution().GetWorkflowId()] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

func resyncOf(kind string, ref store.LiveRef) Delivery {
	return Delivery{Ref: reconcile.Ref{Kind: kind, ID: ref.ID, ParentID: ref.ParentID}, Generation: ref.Generation, Reason: reconcile.ReasonResync, Tenant: ref.Tenant}
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

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
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
