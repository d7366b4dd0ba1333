//go:build !rehearsal

package main

import (
	"io"
	"strings"
	"testing"
)

// The product binary refuses --upgrade-rehearsal: the rehearsal workflow
// is a test seam, built only with -tags rehearsal.
func TestWorkerRefusesUpgradeRehearsal(t *testing.T) {
	cmd := newWorkerCommand()
	if cmd.Flags().Lookup("upgrade-rehearsal") != nil {
		t.Fatal("worker has an --upgrade-rehearsal flag without the rehearsal build tag")
	}
	cmd.SetArgs([]string{"--upgrade-rehearsal"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "unknown flag: --upgrade-rehearsal") {
		t.Fatalf("worker --upgrade-rehearsal = %v, want unknown flag", err)
	}
}
