//go:build rehearsal

package main

import (
	"io"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hyperfleet/hyperfleet/tests/rehearsal"
)

// A test build's --upgrade-rehearsal makes the reconciler host the
// rehearsal workflow; without it (or =false) the plain one.
func TestUpgradeRehearsalFlag(t *testing.T) {
	rehearsed := reflect.ValueOf(rehearsal.Workflow).Pointer()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--upgrade-rehearsal"}, true},
		{[]string{"--upgrade-rehearsal=true"}, true},
		{[]string{"--upgrade-rehearsal", "--upgrade-rehearsal=false"}, false},
	} {
		var r rolloutFlags
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		r.add(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := r.workflow != nil && reflect.ValueOf(r.workflow).Pointer() == rehearsed; got != tc.want {
			t.Errorf("%v: hosts the rehearsal workflow = %v, want %v", tc.args, got, tc.want)
		}
	}
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	(&rolloutFlags{}).add(fs)
	if err := fs.Parse([]string{"--upgrade-rehearsal=maybe"}); err == nil {
		t.Error("--upgrade-rehearsal=maybe was accepted")
	}
}
