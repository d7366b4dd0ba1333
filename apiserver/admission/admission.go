// Package admission decides how much reconcile work the API hands to
// Temporal at once: a window of rounds in flight across the fleet that
// grows while Temporal keeps up and shrinks when it stops keeping up,
// so a burst of changes waits in the outbox (durable, counted) instead
// of overloading Temporal.
//
// Why a bound is needed: Temporal's matching service gives its history
// service one second to record a task handed to a waiting worker as
// started. Past that, matching drops the task and the activity or
// workflow task waits out its timeout (a lost dispatch, seconds to tens of
// seconds each), which adds load and feeds the overload. Nothing in
// Temporal queues the excess for us before that point.
//
// What "in flight" means: a resource whose change was handed to Temporal
// and whose reconcile has not yet finished its first pass at that
// generation: not every adapter its kind registers has reported at it.
// That span covers the work Temporal must do at once for a change (start
// or signal the workflow, dispatch its workflow task and every adapter's
// first run, which start together); what follows (a Job running, a
// backoff) loads it little. Ending it at the first report instead let
// the other adapters' runs of a round pile up in matching once their
// round no longer counted: with adapters in a worker of their own, one
// run in 5,000 was dropped there. It is counted in the database, so every API replica sees the
// same window.
//
// How the window moves, once a second (Tick), like TCP's congestion
// window: it grows while it is in use and nothing says Temporal is
// falling behind, quickly at first (by half a second) and by 5% a second
// after the first sign of congestion; on a sign of congestion it shrinks
// to 70%, at most once every three seconds, never below Min. The signs:
//   - Temporal refused or timed out a hand-off (ResourceExhausted,
//     Unavailable, DeadlineExceeded);
//   - the slowest tenth of the interval's hand-offs took longer than
//     HandoffTarget (a quarter of the one second above: each hand-off is a
//     history write, so its latency is the history service's);
//   - rounds started slower than before: the interval's median latency
//     from hand-off to the end of the first pass exceeded twice the lowest median of
//     the last two minutes plus two seconds.
//
// Nothing here needs tuning for the machine: the targets are Temporal's
// own one second and the latencies the system shows when it is not
// loaded. A 2-core machine settles on a small window, a large cluster on
// a large one.
package admission

import (
	"slices"
	"sync"
	"time"
)

// Defaults of a Controller.
const (
	DefaultInitial       = 16
	DefaultMin           = 4
	DefaultMax           = 100_000
	DefaultHandoffTarget = 250 * time.Millisecond
	DefaultInterval      = time.Second
)

// The controller's internal constants (see the package comment).
const (
	startGrowth   = 1.5  // the window's growth an interval until the first congestion
	steadyGrowth  = 0.05 // its growth an interval after that
	cut           = 0.7  // what is left after a congestion
	cutEvery      = 3    // intervals between two cuts
	usedShare     = 0.8  // the share of the window in use that lets it grow
	baselineSpan  = 120  // intervals the round-latency baseline looks back
	roundsToJudge = 3    // rounds an interval needs before its median counts
	roundSlack    = 2 * time.Second
)

// Signs of congestion (Snapshot.Congested).
const (
	SignRefused        = "temporal-refused"
	SignHandoffLatency = "handoff-latency"
	SignRoundLatency   = "round-latency"
)

// Signs lists every sign of congestion.
var Signs = []string{SignRefused, SignHandoffLatency, SignRoundLatency}

// Config tunes a Controller; zero values take the defaults.
type Config struct {
	Initial, Min, Max int
	// HandoffTarget is the hand-off latency (90th percentile of an
	// interval) above which Temporal counts as falling behind.
	HandoffTarget time.Duration
	// Interval is how often the window moves.
	Interval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Min <= 0 {
		c.Min = DefaultMin
	}
	if c.Max <= 0 {
		c.Max = DefaultMax
	}
	if c.Initial <= 0 {
		c.Initial = DefaultInitial
	}
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	if c.HandoffTarget <= 0 {
		c.HandoffTarget = DefaultHandoffTarget
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	return c
}

// Controller is the window of one relay. Safe for concurrent use.
type Controller struct {
	cfg Config

	mu        sync.Mutex
	window    float64
	started   bool // the first congestion has been seen
	lastTick  time.Time
	sinceCut  int // intervals since the last cut
	handoffs  []time.Duration
	refusals  int
	rounds    []time.Duration
	peakInUse int
	// medians are the round-latency medians of recent intervals, newest
	// last, for the baseline.
	medians []time.Duration
	last    Snapshot
}

// New returns a controller at its initial window.
func New(cfg Config) *Controller {
	cfg = cfg.withDefaults()
	return &Controller{cfg: cfg, window: float64(cfg.Initial), sinceCut: cutEvery}
}

// Handoff records one hand-off to Temporal: how long the call took and
// whether Temporal said it is overloaded (refused: ResourceExhausted,
// Unavailable, DeadlineExceeded).
func (c *Controller) Handoff(took time.Duration, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if refused {
		c.refusals++
		return
	}
	c.handoffs = append(c.handoffs, took)
}

// Started records rounds that started: the time from each one's hand-off
// to the end of its first pass (every registered adapter reported).
func (c *Controller) Started(latencies ...time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rounds = append(c.rounds, latencies...)
}

// Free is how many more rounds may be admitted now, given how many are
// in flight across the fleet. It also notes how full the window was, which
// decides whether it may grow.
func (c *Controller) Free(inFlight int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peakInUse = max(c.peakInUse, inFlight)
	return max(0, int(c.window)-inFlight)
}

// Window is the current bound on rounds in flight.
func (c *Controller) Window() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.window)
}

// Snapshot is what the last interval decided, for metrics and logs.
type Snapshot struct {
	Window int
	// Congested names the sign of congestion the last interval showed
	// ("" when none).
	Congested string
	// HandoffP90 and RoundMedian are the last interval's latencies
	// (zero when it had none); Baseline the lowest recent round median.
	HandoffP90, RoundMedian, Baseline time.Duration
	// Started counts the rounds that started in the last interval.
	Started int
}

// Last is what the last interval decided.
func (c *Controller) Last() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Tick moves the window once an interval has passed since the last move,
// from what the interval showed, and reports whether it did.
func (c *Controller) Tick(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lastTick.IsZero() && now.Sub(c.lastTick) < c.cfg.Interval {
		return false
	}
	c.lastTick = now
	s := Snapshot{HandoffP90: percentile(c.handoffs, 90), RoundMedian: percentile(c.rounds, 50), Started: len(c.rounds)}
	if len(c.rounds) >= roundsToJudge {
		c.medians = append(c.medians, s.RoundMedian)
		if len(c.medians) > baselineSpan {
			c.medians = c.medians[len(c.medians)-baselineSpan:]
		}
	}
	if len(c.medians) > 0 {
		s.Baseline = slices.Min(c.medians)
	}
	switch {
	case c.refusals > 0:
		s.Congested = SignRefused
	case s.HandoffP90 > c.cfg.HandoffTarget:
		s.Congested = SignHandoffLatency
	case len(c.rounds) >= roundsToJudge && s.RoundMedian > 2*s.Baseline+roundSlack:
		s.Congested = SignRoundLatency
	}
	c.sinceCut++
	used := float64(c.peakInUse) >= usedShare*c.window
	switch {
	case s.Congested != "":
		c.started = true
		if c.sinceCut >= cutEvery {
			c.window = max(float64(c.cfg.Min), c.window*cut)
			c.sinceCut = 0
		}
	case used && !c.started:
		c.window = min(float64(c.cfg.Max), c.window*startGrowth)
	case used:
		c.window = min(float64(c.cfg.Max), c.window+max(1, c.window*steadyGrowth))
	}
	s.Window = int(c.window)
	c.handoffs, c.rounds, c.refusals, c.peakInUse = c.handoffs[:0], c.rounds[:0], 0, 0
	c.last = s
	return true
}

// percentile is the p-th percentile of ds (nearest rank; 0 when empty).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
