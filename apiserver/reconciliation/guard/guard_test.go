package guard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a manual clock: Sleep records the wait without passing time,
// so a test says when time passes.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	return nil
}

func (c *clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

func newGroup(t *testing.T, c *clock, perSecond float64) *Group[string] {
	t.Helper()
	g, err := New[string](Config{PerSecond: perSecond, Now: c.Now, Sleep: c.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// counting is a read that counts its calls and answers "v<n>".
type counting struct{ n atomic.Int32 }

func (r *counting) read(context.Context) (string, error) {
	return "v" + string(rune('0'+r.n.Add(1))), nil
}

func TestConcurrentCallersShareOneRead(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 100)
	release := make(chan struct{})
	var reads atomic.Int32
	read := func(context.Context) (string, error) {
		reads.Add(1)
		<-release
		return "state", nil
	}
	const callers = 20
	var wg sync.WaitGroup
	got := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = g.Do(context.Background(), "Cluster/a", read)
		}()
	}
	// Let the callers pile up on the read in flight, then let it finish.
	deadline := time.Now().Add(5 * time.Second)
	for reads.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("%d callers of one key made %d reads, want 1", callers, n)
	}
	for i := range callers {
		if got[i] != "state" || errs[i] != nil {
			t.Errorf("caller %d got %q, %v; want the shared read's result", i, got[i], errs[i])
		}
	}
	// Another key is another read.
	if v, err := g.Do(context.Background(), "Cluster/b", func(context.Context) (string, error) { return "b", nil }); v != "b" || err != nil {
		t.Errorf("another key = %q, %v; want its own read", v, err)
	}
}

func TestResultIsReusedForOneSecond(t *testing.T) {
	for _, tc := range []struct {
		name      string
		after     time.Duration
		wantReads int32
		want      string
	}{
		{"at once", 0, 1, "v1"},
		{"just before a second", time.Second - time.Millisecond, 1, "v1"},
		{"at a second", time.Second, 2, "v2"},
		{"later", time.Minute, 2, "v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			g := newGroup(t, c, 100)
			var r counting
			if v, err := g.Do(context.Background(), "k", r.read); v != "v1" || err != nil {
				t.Fatalf("first read = %q, %v", v, err)
			}
			c.Advance(tc.after)
			v, err := g.Do(context.Background(), "k", r.read)
			if err != nil || v != tc.want || r.n.Load() != tc.wantReads {
				t.Errorf("%s after the read: %q, %v with %d reads; want %q with %d", tc.after, v, err, r.n.Load(), tc.want, tc.wantReads)
			}
		})
	}
}

func TestErrorsAreNotRemembered(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 100)
	boom := errors.New("temporal did not answer")
	calls := 0
	read := func(context.Context) (string, error) {
		calls++
		if calls == 1 {
			return "", boom
		}
		return "state", nil
	}
	if _, err := g.Do(context.Background(), "k", read); !errors.Is(err, boom) {
		t.Fatalf("first read = %v, want its error", err)
	}
	// No time passes: an error is still not handed out again.
	if v, err := g.Do(context.Background(), "k", read); v != "state" || err != nil || calls != 2 {
		t.Errorf("the caller after an error got %q, %v after %d reads; want a read of its own", v, err, calls)
	}
}

func TestPanickingReadFailsItsCallersOnly(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 100)
	_, err := g.Do(context.Background(), "k", func(context.Context) (string, error) { panic("bad state") })
	if err == nil {
		t.Fatal("a panicking read answered no error")
	}
	if v, err := g.Do(context.Background(), "k", func(context.Context) (string, error) { return "ok", nil }); v != "ok" || err != nil {
		t.Errorf("after a panicking read: %q, %v; want a new read", v, err)
	}
}

func TestBudgetWaitsThenRefuses(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 2) // two at once, then one every 500ms
	var r counting
	for i, want := range []struct {
		wait time.Duration // 0: no wait
		busy bool
	}{
		{0, false},
		{0, false},
		{500 * time.Millisecond, false},
		{time.Second, false}, // exactly the longest wait: admitted
		{0, true},            // 1.5s away: refused, without waiting
		{0, true},            // the refused turn was given back: still 1.5s away
	} {
		before := len(c.Slept())
		_, err := g.Do(context.Background(), string(rune('a'+i)), r.read)
		if busy := errors.Is(err, ErrBusy); busy != want.busy || (!want.busy && err != nil) {
			t.Errorf("read %d: %v, want busy=%v", i+1, err, want.busy)
		}
		slept := c.Slept()[before:]
		switch {
		case want.wait == 0 && len(slept) != 0:
			t.Errorf("read %d waited %v, want no wait", i+1, slept)
		case want.wait != 0 && (len(slept) != 1 || slept[0] != want.wait):
			t.Errorf("read %d waited %v, want %s", i+1, slept, want.wait)
		}
	}
	if n := r.n.Load(); n != 4 {
		t.Errorf("%d reads reached the backend, want the 4 admitted", n)
	}
	// A refusal is not remembered: once the budget has room, the refused
	// key reads.
	c.Advance(2 * time.Second)
	if v, err := g.Do(context.Background(), "e", r.read); err != nil || v != "v5" {
		t.Errorf("the refused key 2s later = %q, %v; want a read", v, err)
	}
}

// A refusal suggests a wait that grows with the refusals a second for
// each read the budget allows (at least 1 s, at most MaxRetryAfter), and
// forgets refusals older than its window.
func TestRefusalSuggestsAWaitForTheLoad(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 1) // one now, one a second after, then refusals
	var r counting
	key := 0
	read := func() error {
		key++
		_, err := g.Do(context.Background(), fmt.Sprint(key), r.read)
		return err
	}
	refuse := func(n int) time.Duration {
		t.Helper()
		var busy *BusyError
		for range n {
			if err := read(); !errors.As(err, &busy) || !errors.Is(err, ErrBusy) {
				t.Fatalf("read %d = %v, want a refusal (a *BusyError that is ErrBusy)", key, err)
			}
		}
		return busy.RetryAfter
	}
	for range 2 {
		if err := read(); err != nil {
			t.Fatalf("read %d within the budget: %v", key, err)
		}
	}
	for _, step := range []struct {
		refusals int
		want     time.Duration
	}{
		{1, time.Second},      // 0.1 refusals a second: the least wait
		{9, time.Second},      // 1 a second for a budget of 1
		{20, 3 * time.Second}, // 30 in the window: 3 a second
		{1000, MaxRetryAfter}, // 103 a second: capped
	} {
		if got := refuse(step.refusals); got != step.want {
			t.Errorf("after %d refusals in all, the wait = %s, want %s", key-2, got, step.want)
		}
	}
	// Past the window the old refusals no longer count.
	c.Advance(busyWindow * time.Second)
	for range 2 {
		if err := read(); err != nil {
			t.Fatalf("read %d with the budget refilled: %v", key, err)
		}
	}
	if got := refuse(1); got != time.Second {
		t.Errorf("a refusal a window later suggests %s, want 1s", got)
	}
}

// A lower budget takes effect at once for new reads; a bad value is
// ignored.
func TestSetPerSecond(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 10)
	var r counting
	g.SetPerSecond(1)
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		g.SetPerSecond(bad)
	}
	if g.PerSecond() != 1 {
		t.Fatalf("budget %g after bad values, want 1", g.PerSecond())
	}
	// One at once, the next a second away (admitted at the longest
	// wait), the one after refused.
	busy := 0
	for i := range 3 {
		if _, err := g.Do(context.Background(), string(rune('a'+i)), r.read); errors.Is(err, ErrBusy) {
			busy++
		}
	}
	if busy != 1 || r.n.Load() != 2 {
		t.Errorf("at 1 a second: %d refused and %d read, want 1 and 2", busy, r.n.Load())
	}
}

func TestCallerThatLeavesDoesNotCancelTheSharedRead(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 100)
	type key struct{}
	started, release := make(chan struct{}), make(chan struct{})
	var cancelled atomic.Bool
	var readValue atomic.Value
	read := func(ctx context.Context) (string, error) {
		close(started)
		<-release
		cancelled.Store(ctx.Err() != nil)
		readValue.Store(ctx.Value(key{}))
		return "state", nil
	}
	leaving, leave := context.WithCancel(context.WithValue(context.Background(), key{}, "trace"))
	left := make(chan error, 1)
	go func() {
		_, err := g.Do(leaving, "k", read)
		left <- err
	}()
	<-started
	stayed := make(chan string, 1)
	go func() {
		v, _ := g.Do(context.Background(), "k", read)
		stayed <- v
	}()
	leave()
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the caller that left got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller that left did not return while the read ran")
	}
	close(release)
	if v := <-stayed; v != "state" {
		t.Errorf("the caller that stayed got %q, want the read's result", v)
	}
	if cancelled.Load() {
		t.Error("the shared read saw its context end when one of its callers left")
	}
	if v := readValue.Load(); v != "trace" {
		t.Errorf("the read's context value = %v, want the first caller's (trace ids, tenancy)", v)
	}
}

func TestCallerGoneBeforeItAsksStartsNoRead(t *testing.T) {
	g := newGroup(t, newClock(), 100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var r counting
	if _, err := g.Do(ctx, "k", r.read); !errors.Is(err, context.Canceled) || r.n.Load() != 0 {
		t.Errorf("a gone caller got %v after %d reads, want context.Canceled and none", err, r.n.Load())
	}
}

func TestExpiredResultsAreDropped(t *testing.T) {
	c := newClock()
	g := newGroup(t, c, 100)
	var r counting
	for _, k := range []string{"a", "b", "c"} {
		if _, err := g.Do(context.Background(), k, r.read); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(2 * time.Second)
	if _, err := g.Do(context.Background(), "d", r.read); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	n := len(g.entries)
	g.mu.Unlock()
	if n != 1 {
		t.Errorf("%d results kept, want only the one read within the second", n)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, cfg := range []Config{
		{PerSecond: -1},
		{PerSecond: math.NaN()},
		{PerSecond: math.Inf(1)},
		{Reuse: -time.Second},
		{MaxWait: -time.Second},
	} {
		if _, err := New[string](cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want a refusal", cfg)
		}
	}
	g, err := New[string](Config{})
	if err != nil || g.cfg.PerSecond != DefaultPerSecond || g.cfg.Reuse != DefaultReuse || g.cfg.MaxWait != DefaultMaxWait {
		t.Errorf("New(zero) = %+v, %v; want the defaults", g, err)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep of an ended context = %v, want context.Canceled", err)
	}
	if err := sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleep = %v", err)
	}
}
