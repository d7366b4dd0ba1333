package main

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
	}{
		{"", time.Second},
		{"1", time.Second},
		{"7", 7 * time.Second},
		{" 30 ", 30 * time.Second},
		{"0", time.Second},
		{"-4", time.Second},
		{"301", time.Second},
		{"Wed, 21 Oct 2026 07:28:00 GMT", time.Second},
	} {
		if got := retryAfter(c.header); got != c.want {
			t.Errorf("retryAfter(%q) = %s, want %s", c.header, got, c.want)
		}
	}
}
