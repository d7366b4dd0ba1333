package expr

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"time"
)

// celClock is the time behind now(), conditionAge and stableFor. A probe's
// clock also records that one of them was called.
type celClock struct {
	now func() time.Time
	// read, when not nil, is set by every reading (a probe's clock; the
	// probe's mutex serialises its evaluations).
	read *bool
}

// Now reads the clock.
func (c *celClock) Now() time.Time {
	if c.read != nil {
		*c.read = true
	}
	return c.now()
}

// probe is an engine whose clock is set per evaluation, to ask how a
// program's answer moves with time. One evaluation at a time.
type probe struct {
	mu   sync.Mutex
	at   time.Time
	read bool
	eng  *Engine
}

func (e *Engine) prober() (*probe, error) {
	e.probeOnce.Do(func() {
		pr := &probe{}
		pr.eng, e.probeErr = newEngine(&celClock{now: func() time.Time { return pr.at }, read: &pr.read})
		e.probe = pr
	})
	return e.probe, e.probeErr
}

// timeFunctions are the calls that read the clock; a source naming none of
// them cannot depend on it, and is not probed.
var timeFunctions = []string{"now(", "conditionAge(", "stableFor("}

// readsClock reports whether the source may call a function that reads
// the clock.
func readsClock(src string) bool {
	for _, f := range timeFunctions {
		if strings.Contains(src, f) {
			return true
		}
	}
	return false
}

// NextChange answers when the program's answer for vars will next differ
// from its answer at now, when that depends only on time passing: a
// stableFor that turns true, a conditionAge that crosses a threshold, a
// comparison with now(). ok is false when the answer does not read the
// clock, or keeps its value through horizon.
//
// The answer is found by bisection to the millisecond, so it is exact for
// rules that change at most once as time passes (older than, stable for,
// after a time), which is what time-based preconditions are. A rule that
// changes and changes back within the horizon (an age between two bounds)
// may be reported late or not at all: the safety-net round re-evaluates
// it.
func (p *Program) NextChange(ctx context.Context, vars map[string]any, now time.Time, horizon time.Duration) (at time.Time, ok bool) {
	if !readsClock(p.src) || horizon <= 0 {
		return time.Time{}, false
	}
	pr, err := p.in.prober()
	if err != nil {
		return time.Time{}, false
	}
	q, err := p.again(pr.eng)
	if err != nil {
		return time.Time{}, false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	eval := func(t time.Time) (v any, failed bool) {
		pr.at, pr.read = t, false
		v, err := q.Eval(ctx, vars)
		return v, err != nil
	}
	first, failed := eval(now)
	if failed || !pr.read {
		return time.Time{}, false
	}
	same := func(t time.Time) bool {
		v, failed := eval(t)
		return !failed && reflect.DeepEqual(v, first)
	}
	lo, hi := now, now.Add(horizon)
	if same(hi) {
		return time.Time{}, false
	}
	for hi.Sub(lo) > time.Millisecond && ctx.Err() == nil {
		mid := lo.Add(hi.Sub(lo) / 2)
		if same(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, true
}
