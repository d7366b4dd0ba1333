// Package guard keeps reads of a shared backend (the workflow engine behind
// GET <resource>/reconciliation) from hurting it: concurrent callers of one
// key share one read, a result is reused for a short while, and the reads a
// second are bounded, a read over the budget waiting its turn briefly and
// then refused.
//
// It is pure logic: the read itself, the clock and the wait are given.
package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of Config.
const (
	DefaultPerSecond = 10
	DefaultReuse     = time.Second
	DefaultMaxWait   = time.Second
)

// ErrBusy is a read refused because the budget had no turn for it within
// Config.MaxWait. Refusals are *BusyError, which says when to come back.
var ErrBusy = errors.New("over the budget of reads a second")

// BusyError is a refusal (errors.Is(err, ErrBusy)) and the wait it
// suggests before the caller asks again.
type BusyError struct{ RetryAfter time.Duration }

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s; retry in %s", ErrBusy, e.RetryAfter)
}

// Is makes a BusyError match ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// A refusal's suggested wait looks back on the last busyWindow seconds of
// refusals, and is at most MaxRetryAfter.
const (
	busyWindow    = 10
	MaxRetryAfter = 30 * time.Second
)

// Config tunes a Group; zero fields take their defaults.
type Config struct {
	// PerSecond bounds the reads a second (on average; up to PerSecond,
	// at least one, may start at once).
	PerSecond float64
	// Reuse is how long a result is handed out again after its read
	// completed.
	Reuse time.Duration
	// MaxWait is how long a read waits for its turn in the budget before
	// it is refused with ErrBusy.
	MaxWait time.Duration
	// Now and Sleep are the clock (default: the wall clock). Sleep waits
	// d or until ctx ends.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Group shares, reuses and budgets the reads of values of type V, by key.
type Group[V any] struct {
	cfg     Config
	limit   *rate.Limiter
	mu      sync.Mutex
	entries map[string]*entry[V]
	swept   time.Time
	// refused counts refusals by second (Unix time), a ring of the last
	// busyWindow seconds.
	refused [busyWindow]struct {
		sec int64
		n   int
	}
}

// entry is one read: in flight until done is closed, then its value or
// error (an error is never reused: its entry is removed).
type entry[V any] struct {
	done chan struct{}
	v    V
	err  error
	at   time.Time // when the read completed
}

// New returns a Group; a negative or NaN setting is an error naming it.
func New[V any](cfg Config) (*Group[V], error) {
	if cfg.PerSecond < 0 || math.IsNaN(cfg.PerSecond) || math.IsInf(cfg.PerSecond, 0) {
		return nil, fmt.Errorf("reads a second %g: must be a positive number", cfg.PerSecond)
	}
	if cfg.Reuse < 0 || cfg.MaxWait < 0 {
		return nil, fmt.Errorf("reuse %s, wait %s: must not be negative", cfg.Reuse, cfg.MaxWait)
	}
	if cfg.PerSecond == 0 {
		cfg.PerSecond = DefaultPerSecond
	}
	if cfg.Reuse == 0 {
		cfg.Reuse = DefaultReuse
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	return &Group[V]{cfg: cfg, limit: rate.NewLimiter(rate.Limit(cfg.PerSecond), max(1, int(cfg.PerSecond))),
		entries: map[string]*entry[V]{}}, nil
}

// SetPerSecond changes the budget of reads a second from now on (at least
// one a second; a bad value is ignored): reads already waiting keep their
// turn.
func (g *Group[V]) SetPerSecond(perSecond float64) {
	if perSecond <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return
	}
	now := g.cfg.Now()
	g.limit.SetLimitAt(now, rate.Limit(perSecond))
	g.limit.SetBurstAt(now, max(1, int(perSecond)))
}

// PerSecond is the budget of reads a second.
func (g *Group[V]) PerSecond() float64 { return float64(g.limit.Limit()) }

// Do returns the value of key: the result of a read completed less than
// Reuse ago, or of the read in flight, or of a new read. The read runs on
// its own (read gets ctx's values, not its cancellation), so a caller that
// leaves returns ctx's error at once and the others still get the result.
// read must bound its own duration.
func (g *Group[V]) Do(ctx context.Context, key string, read func(context.Context) (V, error)) (V, error) {
	if err := ctx.Err(); err != nil {
		// Gone already: start no read for it.
		var zero V
		return zero, err
	}
	g.mu.Lock()
	e, ok := g.entries[key]
	if !ok || g.expired(e, g.cfg.Now()) {
		e = &entry[V]{done: make(chan struct{})}
		g.sweep()
		g.entries[key] = e
		go g.run(context.WithoutCancel(ctx), key, e, read)
	}
	g.mu.Unlock()
	select {
	case <-e.done:
		return e.v, e.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// expired reports whether e can no longer be handed out: completed Reuse
// ago or more. A read in flight is never expired.
func (g *Group[V]) expired(e *entry[V], now time.Time) bool {
	select {
	case <-e.done:
		return now.Sub(e.at) >= g.cfg.Reuse
	default:
		return false
	}
}

// sweep drops expired entries, at most once per Reuse, so keys read once
// do not stay in memory. Called with mu held.
func (g *Group[V]) sweep() {
	now := g.cfg.Now()
	if now.Sub(g.swept) < g.cfg.Reuse {
		return
	}
	g.swept = now
	for k, e := range g.entries {
		if g.expired(e, now) {
			delete(g.entries, k)
		}
	}
}

// run reads key once it has a turn in the budget and hands the result to
// every caller waiting on e.
func (g *Group[V]) run(ctx context.Context, key string, e *entry[V], read func(context.Context) (V, error)) {
	defer func() {
		// A panicking read fails its callers, not the process: it runs
		// outside any request's recovery.
		if r := recover(); r != nil {
			e.err = fmt.Errorf("read of %s panicked: %v", key, r)
		}
		e.at = g.cfg.Now()
		if e.err != nil {
			g.mu.Lock()
			if g.entries[key] == e {
				delete(g.entries, key)
			}
			g.mu.Unlock()
		}
		close(e.done)
	}()
	if e.err = g.turn(ctx); e.err != nil {
		return
	}
	e.v, e.err = read(ctx)
}

// turn waits for a read's turn in the budget, or refuses it with ErrBusy
// when that is more than MaxWait away (giving the turn back).
func (g *Group[V]) turn(ctx context.Context) error {
	now := g.cfg.Now()
	r := g.limit.ReserveN(now, 1)
	if !r.OK() {
		return &BusyError{RetryAfter: g.refuse(now)}
	}
	d := r.DelayFrom(now)
	if d > g.cfg.MaxWait {
		r.CancelAt(now)
		return &BusyError{RetryAfter: g.refuse(now)}
	}
	if d > 0 {
		return g.cfg.Sleep(ctx, d)
	}
	return nil
}

// refuse counts a refusal at now and returns the wait to suggest: as
// many seconds as there were refusals a second lately for each read the
// budget allows a second, at least one and at most MaxRetryAfter. The
// budget answers the same number of reads a second however often the
// refused callers come back, so a caller told to wait longer gets its
// answer about as soon, and its retries, which the budget would refuse,
// are not made: in a burst each refusal still costs the API an
// authenticated request and a read of the resource's row, on the cores
// the reconciles need. Callers that come back at the suggested wait
// settle where the refusals a second are about the reads it allows.
func (g *Group[V]) refuse(now time.Time) time.Duration {
	sec := now.Unix()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := &g.refused[(sec%busyWindow+busyWindow)%busyWindow]
	if b.sec != sec {
		b.sec, b.n = sec, 0
	}
	b.n++
	n := 0
	for _, b := range g.refused {
		if b.sec > sec-busyWindow {
			n += b.n
		}
	}
	perSecond := float64(n) / busyWindow
	wait := time.Duration(perSecond / g.PerSecond() * float64(time.Second))
	return min(max(wait, time.Second), MaxRetryAfter)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
