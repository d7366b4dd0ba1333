package await

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// fatalTB records the message Fatal is called with and ends the goroutine,
// as testing.T's Fatal does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls fn with a recording TB on its own goroutine, since Fatal ends
// it, and returns the failure message ("" when fn returned).
func run(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		msg := run(t, func(tb testing.TB) {
			Eventually(tb, time.Minute, "third call", func() (bool, string) {
				calls++
				return calls == 3, "not yet"
			})
		})
		if msg != "" || calls != 3 {
			t.Errorf("failed with %q after %d calls", msg, calls)
		}
		if waited := time.Since(start); waited != 2*Interval {
			t.Errorf("waited %s, want two intervals", waited)
		}
	})
}

func TestEventuallyFailureSaysWhatWhyAndDetails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		msg := run(t, func(tb testing.TB) {
			Eventually(tb, time.Second, "cluster ready", func() (bool, string) {
				n++
				return false, fmt.Sprintf("poll %d: Ready=False", n)
			}, nil, func() string { return "history: empty" })
		})
		want := fmt.Sprintf("cluster ready: not within 1s: poll %d: Ready=False\nhistory: empty", n)
		if msg != want {
			t.Errorf("message %q, want %q", msg, want)
		}
		if waited := time.Since(start); waited < time.Second || waited > time.Second+Interval {
			t.Errorf("gave up after %s, want the deadline of 1s", waited)
		}
	})
}

func TestTrueNamesWhatWasAwaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msg := run(t, func(tb testing.TB) {
			True(tb, time.Second, "namespace removed", func() bool { return false })
		})
		if msg != "namespace removed: not within 1s" || strings.Contains(msg, "\n") {
			t.Errorf("message %q", msg)
		}
	})
}
