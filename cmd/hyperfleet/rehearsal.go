//go:build rehearsal

package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/hyperfleet/hyperfleet/tests/rehearsal"
)

// addRehearsalFlag adds `worker --upgrade-rehearsal` to a test build (go
// build -tags rehearsal): the reconciler hosts rehearsal.Workflow, which
// cannot replay the plain workflow's histories, so the rolling-upgrade
// test (tests/topology) can roll out an incompatible release.
func addRehearsalFlag(fs *pflag.FlagSet, r *rolloutFlags) {
	fs.BoolFunc("upgrade-rehearsal", "test build only: host a reconcile workflow that cannot replay the plain one's histories, to rehearse a roll-out of an incompatible release", func(v string) error {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false: %w", err)
		}
		r.workflow = nil
		if on {
			r.workflow = rehearsal.Workflow
		}
		return nil
	})
}
