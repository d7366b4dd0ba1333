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
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"golang.org/x/time/rate"

	"github.com/hyperfleet/hyperfleet/apiserver/admission"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
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
