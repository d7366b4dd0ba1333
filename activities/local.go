package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Local runs the adapters a reconciler's worker hosts as local activities
// of the reconcile workflow, under the adapter run's own name: a round of
// hosted adapters then needs no task queue, no dispatch through Temporal's
// matching service and no activity task, and its runs are markers of the
// workflow task in the history. The workflow asks for any adapter; one
// this worker does not host is answered NotHosted at once, and the
// workflow runs it on the adapter's own task queue.
type Local struct {
	hosted map[string]*Adapter
}

// NewLocal hosts the given adapters' local runs.
func NewLocal(adapters ...*Adapter) *Local {
	l := &Local{hosted: map[string]*Adapter{}}
	for _, a := range adapters {
		l.hosted[a.Engine.Name()] = a
	}
	return l
}

// Register adds the local run under the name the workflow calls.
func (l *Local) Register(r Registry) {
	r.RegisterActivityWithOptions(l.Run, activity.RegisterOptions{Name: reconcile.ActivityRun})
}

// Run runs the named adapter, or says this worker does not host it.
func (l *Local) Run(ctx context.Context, in reconcile.RunInput) (reconcile.RunResult, error) {
	a, ok := l.hosted[in.Adapter]
	if !ok {
		return reconcile.RunResult{Adapter: in.Adapter, NotHosted: true}, nil
	}
	return a.Run(ctx, in)
}
