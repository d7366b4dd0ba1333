package problem

import (
	"net/http"
	"testing"
	"time"
)

func TestTruncate(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc..."},
		{"ééé", 3, "é..."}, // never half a character: é is 2 bytes
		{"日本", 1, "..."},
	}
	for _, c := range cases {
		if got := Truncate(c.in, c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	const def = 5 * time.Second
	for _, c := range []struct {
		set  time.Duration
		want string
	}{
		{0, "5"}, // none set: the default
		{time.Second, "1"},
		{1500 * time.Millisecond, "2"}, // rounded up: never sooner than meant
		{time.Millisecond, "1"},        // at least a second
		{-time.Second, "5"},
	} {
		p := New(http.StatusServiceUnavailable, CodeReadBudget, "busy").WithRetryAfter(c.set)
		if got := p.RetryAfter(def); got != c.want {
			t.Errorf("WithRetryAfter(%s).RetryAfter(%s) = %q, want %q", c.set, def, got, c.want)
		}
	}
}
