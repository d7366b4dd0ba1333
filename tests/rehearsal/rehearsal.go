// Package rehearsal is a test seam: a reconcile workflow that cannot
// replay any history the plain one recorded, as a release with an
// incompatible workflow change could not. The rolling-upgrade test
// (tests/topology) runs it on a new release's workers, in a hyperfleet
// binary built with -tags rehearsal (cmd/hyperfleet/rehearsal.go adds
// `worker --upgrade-rehearsal`), to show that live workflows move to a
// new release without replaying their history there. The product binary
// does not contain it.
package rehearsal

import (
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Marker is the value of the side effect every run records first.
const Marker = "upgrade-rehearsal"

// Workflow is the reconcile workflow with one more command at the start of
// every run: a side effect marker (Marker).
func Workflow(ctx workflow.Context, in reconcile.Input) error {
	var marker string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return Marker }).Get(&marker); err != nil {
		return err
	}
	return reconcile.Workflow(ctx, in)
}
