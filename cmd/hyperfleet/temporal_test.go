package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Bad reconcile settings are refused before anything starts, naming the
// flag, its environment variable and the fix, instead of being taken
// silently as the default.
func TestBadReconcileSettingsAreRefused(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string // "" when accepted
	}{
		{args: []string{"--watched-stability-window=-1h"}, want: "--watched-stability-window (HYPERFLEET_WATCHED_STABILITY_WINDOW) -1h0m0s: must not be negative"},
		{env: map[string]string{"HYPERFLEET_STABILITY_WINDOW": "-5m"}, want: "--stability-window (HYPERFLEET_STABILITY_WINDOW) -5m0s: must not be negative"},
		{args: []string{"--reconcile-backoff=-1s"}, want: "--reconcile-backoff"},
		{args: []string{"--activity-heartbeat-timeout=-1s"}, want: "--activity-heartbeat-timeout"},
		{args: []string{"--reconcile-backoff=2m", "--reconcile-backoff-max=1m"}, want: "lower the first or raise the second"},
		{args: []string{"--stability-jitter=0.9"}, want: "at most 0.5"},
		{args: []string{"--relay-handoff-rate=-3"}, want: "--relay-handoff-rate -3: must not be negative"},
		{args: []string{"--relay-resync-rate=-1"}, want: "--relay-resync-rate -1"},
		{args: []string{"--reconciliation-reads-per-second=0"}, want: "--reconciliation-reads-per-second (HYPERFLEET_RECONCILIATION_READS_PER_SECOND) 0: must be positive"},
		{env: map[string]string{"HYPERFLEET_RECONCILIATION_READS_PER_SECOND": "-2"}, want: "--reconciliation-reads-per-second (HYPERFLEET_RECONCILIATION_READS_PER_SECOND) -2: must be positive"},
		{args: []string{"--reconciliation-reads-per-second=NaN"}, want: "--reconciliation-reads-per-second"},
		// Accepted: explicit defaults, "no jitter", a disabled sweep, a
		// fraction of a read a second.
		{args: []string{"--watched-stability-window=0", "--stability-jitter=-1", "--relay-sweep=-1s", "--reconciliation-reads-per-second=0.5"}},
	}
	for _, command := range []string{"serve", "dev"} {
		for _, tc := range tests {
			name := command + " " + strings.Join(tc.args, " ")
			for k, v := range tc.env {
				name += " " + k + "=" + v
			}
			t.Run(name, func(t *testing.T) {
				for k, v := range tc.env {
					t.Setenv(k, v)
				}
				cmd := newRootCommand()
				var ran bool
				for _, c := range cmd.Commands() {
					if c.Name() == command {
						// Settings are checked before RunE: it must never start.
						c.RunE = func(*cobra.Command, []string) error { ran = true; return nil }
					}
				}
				cmd.SetArgs(append([]string{command}, tc.args...))
				err := cmd.ExecuteContext(context.Background())
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("refused: %v", err)
				case tc.want == "" && !ran:
					t.Error("accepted but did not run")
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("err = %v, want one naming %q", err, tc.want)
				case tc.want != "" && ran:
					t.Error("refused but ran anyway")
				}
			})
		}
	}
}

// A ramp outside (0, 100) is refused before Temporal is dialled, naming
// --ramp; a share inside it gets as far as running.
func TestSetCurrentRampIsChecked(t *testing.T) {
	for _, c := range []struct {
		ramp string
		ok   bool
	}{
		{"0", false}, {"100", false}, {"-5", false}, {"NaN", false}, {"150", false},
		{"0.5", true}, {"25", true}, {"99.9", true},
	} {
		cmd := newRootCommand()
		var ran bool
		for _, v := range cmd.Commands() {
			for _, sub := range v.Commands() {
				if v.Name() == "versions" && sub.Name() == "set-current" {
					sub.RunE = func(*cobra.Command, []string) error { ran = true; return nil }
				}
			}
		}
		cmd.SetArgs([]string{"versions", "set-current", "v2", "--ramp=" + c.ramp})
		err := cmd.ExecuteContext(context.Background())
		switch {
		case c.ok && (err != nil || !ran):
			t.Errorf("--ramp %s: %v (ran %v), want it accepted", c.ramp, err, ran)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "--ramp") || ran):
			t.Errorf("--ramp %s: %v (ran %v), want a refusal naming --ramp", c.ramp, err, ran)
		}
	}
}
