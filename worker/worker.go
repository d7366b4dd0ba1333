// Package worker is the HyperFleet worker process: it connects to Temporal
// and hosts the reconcile workflow (with the ReadResource activity) on the
// reconciler task queue and each adapter's activities on that adapter's
// own task queue. One process may host both, or any subset; a reconciler
// runs the adapters hosted beside it as local activities.
package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/activities"
	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/worker/versioning"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Config says what a worker hosts.
type Config struct {
	Client client.Client
	// Reconciler hosts the reconcile workflows; API then reads resources
	// back for them.
	Reconciler bool
	API        *apiclient.Client
	// Adapters are hosted on their own task queues.
	Adapters []*executor.Engine
	// Version, when it names a build, makes the reconciler that version of
	// its worker deployment: the workflows it starts are pinned to it
	// (package versioning). Adapters are never versioned: an activity
	// replays nothing, so any release's adapter workers serve any
	// workflow.
	Version versioning.Version
	// Workflow, when set, is hosted as the reconcile workflow in place of
	// reconcile.Workflow. Only the rolling-upgrade tests set it (package
	// tests/rehearsal, in a binary built with -tags rehearsal): a release
	// whose workflow cannot replay the previous one's histories.
	Workflow func(workflow.Context, reconcile.Input) error
	// MaxConcurrentActivities bounds each task queue's concurrent
	// activities (0: the SDK's default).
	MaxConcurrentActivities int
	Logger                  zerolog.Logger
}

// Host runs the Temporal workers of one process.
type Host struct {
	workers []sdkworker.Worker
	queues  []string
}

// Start registers what cfg names and starts polling.
func Start(cfg Config) (*Host, error) {
	if !cfg.Reconciler && len(cfg.Adapters) == 0 {
		return nil, errors.New("nothing to host: pass --reconciler and/or at least one adapter (--task-config)")
	}
	h := &Host{}
	// On stop, running phases get 10 s to finish before they are
	// cancelled (and retried elsewhere): most end well within it.
	//
	// An adapter run beats every quarter of its heartbeat timeout; the SDK
	// would send only one beat per 80% of the timeout, leaving a fifth of
	// it (1 s of a 5-s timeout) for the beat to reach the server before a
	// live run is declared dead and retried. Every beat goes out instead:
	// three quarters of margin, for one beat a quarter timeout on the rare
	// runs that last that long.
	opts := sdkworker.Options{MaxConcurrentActivityExecutionSize: cfg.MaxConcurrentActivities,
		WorkflowTaskPollerBehavior: pollers(), ActivityTaskPollerBehavior: pollers(),
		WorkerStopTimeout: 10 * time.Second, MaxHeartbeatThrottleInterval: time.Second}
	hosted := make([]*activities.Adapter, 0, len(cfg.Adapters))
	seen := map[string]bool{}
	for _, eng := range cfg.Adapters {
		if seen[eng.Name()] {
			return nil, fmt.Errorf("adapter %q is configured twice: each adapter name owns one task queue", eng.Name())
		}
		seen[eng.Name()] = true
		hosted = append(hosted, &activities.Adapter{Engine: eng, Logger: cfg.Logger})
	}
	if cfg.Reconciler {
		if cfg.API == nil {
			return nil, errors.New("the reconciler needs the API's address (--api-base-url)")
		}
		// The reconciler runs the adapters hosted here as local activities
		// of its workflows (activities.Local), within the same bound.
		wopts := opts
		wopts.MaxConcurrentLocalActivityExecutionSize = cfg.MaxConcurrentActivities
		if v := cfg.Version; v.Versioned() {
			wopts.DeploymentOptions = sdkworker.DeploymentOptions{
				UseVersioning:             true,
				Version:                   sdkworker.WorkerDeploymentVersion{DeploymentName: v.Deployment, BuildID: v.BuildID},
				DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
			}
		}
		w := sdkworker.New(cfg.Client, reconcile.TaskQueue, wopts)
		fn := reconcile.Workflow
		if cfg.Workflow != nil {
			fn = cfg.Workflow
		}
		w.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: reconcile.WorkflowName})
		(&activities.Resources{API: cfg.API}).Register(w)
		activities.NewLocal(hosted...).Register(w)
		h.add(w, reconcile.TaskQueue)
	}
	// Every hosted adapter also serves its own task queue: the runs of
	// reconcilers that do not host it, and its optional runs.
	for _, a := range hosted {
		queue := reconcile.AdapterTaskQueue(a.Engine.Name())
		w := sdkworker.New(cfg.Client, queue, opts)
		a.Register(w)
		h.add(w, queue)
	}
	for i, w := range h.workers {
		if err := w.Start(); err != nil {
			h.Stop()
			return nil, fmt.Errorf("start worker on task queue %s: %w", h.queues[i], err)
		}
	}
	cfg.Logger.Info().Strs("task_queues", h.queues).Msg("worker polling")
	return h, nil
}

// pollers is how every queue of a worker polls: autoscaled between 2 and
// 32 pollers from the server's hints, starting at 8.
//
// Fixed pollers, as before, share one set between a reconciler's sticky
// queue (workflows it has cached) and the normal queue (new workflows),
// and the SDK sends every poll to the sticky queue while it has a backlog:
// in a burst of creates the first workflow task of a new cluster waited
// 4 s on average while the running ones went on. Autoscaling polls the two
// queues with pollers of their own and adds pollers while tasks wait: 200
// clusters created at once reconciled 17-20 clusters/s instead of 15
// (docs/benchmarks.md). At rest it scales down to two polls a queue.
func pollers() sdkworker.PollerBehavior {
	return sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{
		InitialNumberOfPollers: 8, MinimumNumberOfPollers: 2, MaximumNumberOfPollers: 32,
	})
}

func (h *Host) add(w sdkworker.Worker, queue string) {
	h.workers = append(h.workers, w)
	h.queues = append(h.queues, queue)
}

// TaskQueues lists the queues this host polls.
func (h *Host) TaskQueues() []string { return h.queues }

// Stop stops polling and waits for running activities (up to the SDK's
// stop timeout).
func (h *Host) Stop() {
	for _, w := range h.workers {
		w.Stop()
	}
}
