// Package await holds the one way tests wait for a condition: poll it until
// it holds or a deadline passes, and on failure say what was awaited and
// why it did not hold. It has no dependencies, so unit tests can use it
// without pulling in the test servers of internal/testenv.
package await

import (
	"testing"
	"time"
)

// Interval is how often Eventually polls: short enough not to slow tests
// down, long enough not to load the servers the conditions ask.
const Interval = 100 * time.Millisecond

// Eventually polls cond until it reports true, and fails t when within has
// passed. what names the awaited state ("" when cond's reasons say it);
// cond returns whether it holds and, when not, why, and the last reason is
// in the failure message. explain, when given and not nil, is called once
// on failure to add details that are too costly to gather on every poll.
// Inside a testing/synctest bubble the waiting is on the bubble's clock.
func Eventually(t testing.TB, within time.Duration, what string, cond func() (ok bool, why string), explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			msg := "not within " + within.String()
			if what != "" {
				msg = what + ": " + msg
			}
			if why != "" {
				msg += ": " + why
			}
			for _, fn := range explain {
				if fn != nil {
					msg += "\n" + fn()
				}
			}
			t.Fatal(msg)
		}
		time.Sleep(Interval)
	}
}

// True is Eventually for a condition that has no reason to give.
func True(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, within, what, func() (bool, string) { return cond(), "" })
}
