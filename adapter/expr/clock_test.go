package expr

import (
	"context"
	"testing"
	"time"
)

// Contract: a time-based precondition is re-evaluated exactly when its
// answer can change; NextChange says when that is.
func TestNextChange(t *testing.T) {
	e := engine(t)
	names := []string{"cluster"}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name    string
		expr    string
		horizon time.Duration
		want    time.Time // zero: no change within the horizon
	}{
		{"stableFor turns true", `stableFor(cluster.status.conditions, "Reconciled", 900)`, time.Hour, at("2025-06-01T12:05:00Z")},
		{"age crosses a lower bound", `conditionAge(cluster.status.conditions, "Reconciled") > 700`, time.Hour, at("2025-06-01T12:01:41Z")},
		{"age crosses an upper bound", `conditionAge(cluster.status.conditions, "Reconciled") < 1200`, time.Hour, at("2025-06-01T12:10:00Z")},
		{"now passes a time", `timestamp(now()) > timestamp("2025-06-01T13:00:00Z")`, 2 * time.Hour, at("2025-06-01T13:00:01Z")},
		{"beyond the horizon", `stableFor(cluster.status.conditions, "Reconciled", 900)`, time.Minute, time.Time{}},
		{"already stable", `stableFor(cluster.status.conditions, "Reconciled", 300)`, time.Hour, time.Time{}},
		{"condition not True", `stableFor(cluster.status.conditions, "Available", 10)`, time.Hour, time.Time{}},
		{"no clock", `cluster.name == "abc"`, time.Hour, time.Time{}},
		{"names a time function it never calls", `cluster.name == "now()"`, time.Hour, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.Compile(tc.expr, names)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.NextChange(context.Background(), vars(), clock, tc.horizon)
			if ok != !tc.want.IsZero() {
				t.Fatalf("NextChange = %v, %v; want %v", got, ok, tc.want)
			}
			if ok && (got.Before(tc.want) || got.Sub(tc.want) > time.Millisecond) {
				t.Fatalf("NextChange = %s, want %s (to the millisecond)", got.Format(time.RFC3339Nano), tc.want.Format(time.RFC3339))
			}
			// The program itself still reads the engine's clock.
			if _, err := p.Eval(context.Background(), vars()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Probing never disturbs evaluations running beside it on the engine.
func TestNextChangeConcurrentWithEval(t *testing.T) {
	e := engine(t)
	p, err := e.Compile(`conditionAge(cluster.status.conditions, "Reconciled")`, []string{"cluster"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			p.NextChange(context.Background(), vars(), clock, time.Hour)
		}
	}()
	for range 200 {
		v, err := p.Eval(context.Background(), vars())
		if err != nil || v != int64(600) {
			t.Fatalf("Eval = %v, %v; want 600 while probing", v, err)
		}
	}
	<-done
}
