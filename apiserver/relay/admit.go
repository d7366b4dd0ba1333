package relay

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"

	"github.com/hyperfleet/hyperfleet/apiserver/admission"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// lostAfter is how long a round admitted without any adapter report
// counts as in flight. Past it, the round is taken as one whose adapters
// cannot report (a worker down, an adapter failing before it reports):
// it must not hold the window for good.
const lostAfter = 2 * time.Minute

// keepStarted is how long a started round stays in the admissions table,
// for every replica to read how long it took to start.
const keepStarted = time.Minute

// admitter holds the relay's admission control: the window, what it
// counts, and what it shows.
type admitter struct {
	ctl   *admission.Controller
	store admitStore
	gauge admitGauges

	mu sync.Mutex
	// read is the newest start time read from the store.
	read time.Time
	// rate is rounds started a second, smoothed over about ten seconds.
	rate float64
	// pending and inFlight are the last counts.
	pending, inFlight int
	lastPrune         time.Time
	lastLog           time.Time
}

// admitStore is what admission control reads: the rounds in flight, and
// the backlog it drains.
type admitStore interface {
	store.Admissions
	store.Outbox
}

type admitGauges struct {
	window, inFlight, rate, drain prometheus.Gauge
	congested                     *prometheus.CounterVec
}

func newAdmitter(st admitStore, cfg admission.Config, reg prometheus.Registerer) *admitter {
	g := admitGauges{
		window: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hyperfleet_admission_window",
			Help: "Reconcile rounds the relay lets be in flight at once across the fleet (admission control; docs/operator-guide.md)."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hyperfleet_admission_in_flight",
			Help: "Reconcile rounds handed to Temporal whose first pass has not ended: not every adapter of the kind has reported at the generation yet."}),
		rate: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hyperfleet_admission_started_per_second",
			Help: "Reconcile rounds started a second, over about the last ten seconds."}),
		drain: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hyperfleet_outbox_drain_seconds",
			Help: "Expected time until the changes waiting in the outbox are handed to Temporal, at the current rate (0: none wait)."}),
		congested: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hyperfleet_admission_congestion_total",
			Help: "Intervals in which admission control saw Temporal falling behind, by sign (temporal-refused, handoff-latency, round-latency)."}, []string{"sign"}),
	}
	// Every sign is exported from the start, at 0, so a dashboard or
	// alert on it has a series before the first congestion.
	for _, sign := range admission.Signs {
		g.congested.WithLabelValues(sign)
	}
	if reg != nil {
		reg.MustRegister(g.window, g.inFlight, g.rate, g.drain, g.congested)
	}
	a := &admitter{ctl: admission.New(cfg), store: st, gauge: g, read: time.Now()}
	g.window.Set(float64(a.ctl.Window()))
	return a
}

// free is how many rounds may be admitted now.
func (a *admitter) free(ctx context.Context) (int, error) {
	n, err := a.store.InFlight(ctx, time.Now().Add(-lostAfter))
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	a.inFlight = n
	a.mu.Unlock()
	a.gauge.inFlight.Set(float64(n))
	return a.ctl.Free(n), nil
}

// handoff records one call to Temporal.
func (a *admitter) handoff(took time.Duration, err error) {
	a.ctl.Handoff(took, overloaded(err))
}

// overloaded reports whether Temporal's answer says it cannot keep up.
func overloaded(err error) bool {
	if err == nil {
		return false
	}
	var exhausted *serviceerror.ResourceExhausted
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &exhausted) || errors.As(err, &unavailable) || errors.As(err, &deadline) ||
		errors.Is(err, context.DeadlineExceeded)
}

// admitted records the rounds the delivered rows start. A removal starts
// no round; the other reasons all run adapters.
func (a *admitter) admitted(ctx context.Context, delivered []Delivery) error {
	now := time.Now()
	var rows []store.Admission
	for _, d := range delivered {
		if admits(d.Reason) {
			rows = append(rows, store.Admission{ResourceID: d.Ref.ID, Generation: d.Generation, At: now})
		}
	}
	return a.store.Admit(ctx, rows)
}

// admits reports whether a hand-off for reason is counted in flight: a
// new generation, whose first pass (every registered adapter reported at
// it) ends it. Other reasons
// (a parent that became Reconciled, a removal) ask a workflow for rounds
// at a generation its adapters may have reported already, so no report
// would end them.
func admits(reason reconcile.Reason) bool {
	return reason == store.OutboxCreated || reason == store.OutboxUpdated || reason == store.OutboxDeleting
}

// tick reads the rounds that started, moves the window once an interval,
// and refreshes the gauges; about once a minute it forgets old rows.
func (a *admitter) tick(ctx context.Context, log func(admission.Snapshot, int, int, float64)) error {
	started, newest, err := a.store.StartedAfter(ctx, a.readSince())
	if err != nil {
		return err
	}
	a.ctl.Started(started...)
	now := time.Now()
	if !a.ctl.Tick(now) {
		return nil
	}
	pending, _, err := a.store.OutboxBacklog(ctx)
	if err != nil {
		return err
	}
	snap := a.ctl.Last()
	a.mu.Lock()
	a.read = newest
	// About ten seconds of memory at one tick a second.
	a.rate = 0.9*a.rate + 0.1*float64(snap.Started)
	a.pending = int(pending)
	rate, inFlight := a.rate, a.inFlight
	prune := now.Sub(a.lastPrune) > time.Minute
	if prune {
		a.lastPrune = now
	}
	logNow := pending > 0 && now.Sub(a.lastLog) >= 10*time.Second
	if logNow {
		a.lastLog = now
	}
	a.mu.Unlock()
	a.gauge.window.Set(float64(snap.Window))
	a.gauge.rate.Set(rate)
	a.gauge.drain.Set(drainTime(int(pending), rate).Seconds())
	if snap.Congested != "" {
		a.gauge.congested.WithLabelValues(snap.Congested).Inc()
	}
	if logNow && log != nil {
		log(snap, int(pending), inFlight, rate)
	}
	if prune {
		return a.store.PruneAdmissions(ctx, now.Add(-max(lostAfter, keepStarted)))
	}
	return nil
}

func (a *admitter) readSince() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.read
}

// drainTime is how long pending changes take to hand over at rate rounds
// a second (at least one a minute: a stalled rate still drains, slowly).
func drainTime(pending int, rate float64) time.Duration {
	if pending == 0 {
		return 0
	}
	rate = max(rate, 1.0/60)
	return time.Duration(math.Ceil(float64(pending)/rate)) * time.Second
}

// Status is what the relay's admission control shows: for the metrics,
// and for a REST client reading why its change waits.
type Status struct {
	// Window bounds the rounds in flight; InFlight are in flight now.
	Window, InFlight int
	// Pending changes wait in the outbox; StartedPerSecond is the recent
	// rate of rounds starting; Drain the expected time to hand them over.
	Pending          int
	StartedPerSecond float64
	Drain            time.Duration
}

// Admission is the relay's admission status (zero without admission
// control).
func (r *Relay) Admission() Status {
	a := r.admit
	if a == nil {
		return Status{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return Status{Window: a.ctl.Window(), InFlight: a.inFlight, Pending: a.pending, StartedPerSecond: a.rate,
		Drain: drainTime(a.pending, a.rate)}
}
