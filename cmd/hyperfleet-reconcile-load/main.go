// Command hyperfleet-reconcile-load measures end-to-end reconciliation on
// the embedded stack (mode temporal) or the production shape (mode
// production: package topology, every part its own process) against a
// real kube-apiserver whose Job, Deployment and ReplicaSet controllers
// run, with a stand-in for the kubelet that moves each pod on --pod-delay
// after it exists.
//
// Workloads (--workload):
//   - shipped: the three shipped cluster adapters (validation,
//     landing-zone, validation-job; the Job waits for the landing zone);
//   - chain: upstream HyperFleet's end-to-end adapters cl-namespace, cl-job
//     (waits for the namespace) and cl-deployment (waits for the Job), read
//     from --chain-dir.
//
// Scenarios (--scenario):
//   - burst: POST --clusters clusters and wait until all are Reconciled,
//     once per mode (temporal, and poll: an idealised Sentinel that lists
//     clusters every --poll-interval and runs every adapter in-process for
//     each one not Reconciled). Prints latency and throughput, and for
//     temporal the cost per cluster read from the workflow histories.
//   - changes: the cost of each kind of change (create, spec PATCH, label
//     PATCH, an idle stability window, DELETE) for a few clusters, from
//     the workflow histories.
//   - idle: --clusters Reconciled clusters left alone with a short
//     --stability-window for --idle; prints the CPU one self-healing round
//     costs and the clusters the machine carries at 70% CPU with the
//     default 30-minute window.
//   - single: --clusters clusters created one at a time on an idle
//     system, each waited for until Reconciled: create→Ready of a lone
//     change, per mode.
//   - drift: --clusters Reconciled clusters; each object their adapters
//     applied (shipped: the ConfigMap, then the namespace; maestro: the
//     ManifestWork, deleted through Maestro) is deleted behind their back,
//     one at a time, and timed until it is back.
//   - restart: --clusters clusters with running workflows; the API is
//     restarted with the same adapters and options, then with one more
//     adapter: time to ready, time for the start-up pass, workflows it
//     started and signals it sent (sampled from the histories).
//
// Latency is read from the API itself: Ready's last_transition_time minus
// the cluster's created_time, so the driver's own polling adds nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

type options struct {
	workload     string
	chainDir     string
	scenario     string
	clusters     int
	concurrency  int
	modes        string
	pollInterval time.Duration
	podDelay     time.Duration
	timeout      time.Duration
	window       time.Duration
	watched      time.Duration
	idle         time.Duration
	cpuProfile   string
	workers      int
	// adapterWorkers moves the adapters into processes of their own.
	adapterWorkers int
	hyperfleet     string
	// readers poll the reconciliation endpoint during a burst.
	readers int
	// watchers watch /clusters during a burst.
	watchers      int
	rate          float64
	handoffRate   float64
	noAdmission   bool
	historyShards int
	handoffTarget time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.workload, "workload", "shipped", "adapters to run: shipped (validation, landing-zone, validation-job), status (validation alone: status only), chain (cl-namespace, cl-job, cl-deployment), maestro (cl-maestro through a real Maestro server and agent) or namespace (cl-namespace alone)")
	flag.StringVar(&o.chainDir, "chain-dir", "../shared/compat/upstream-e2e-adapters", "directory holding upstream's end-to-end adapters (cl-namespace, cl-job, cl-deployment, cl-maestro)")
	flag.StringVar(&o.scenario, "scenario", "burst", "what to measure: burst, changes, idle, restart, drift, single")
	flag.IntVar(&o.clusters, "clusters", 200, "clusters to create")
	flag.IntVar(&o.concurrency, "concurrency", 20, "concurrent POSTs")
	flag.StringVar(&o.modes, "modes", "temporal,poll", "burst: what to measure (temporal: the embedded stack; production: the production shape, see package topology; poll)")
	flag.DurationVar(&o.pollInterval, "poll-interval", 5*time.Second, "the polling baseline's interval (the upstream Sentinel's default is 5s)")
	flag.DurationVar(&o.podDelay, "pod-delay", time.Second, "how long after a pod exists the kubelet stand-in reports it (Job pods succeed, others turn Ready)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up waiting after this long")
	flag.DurationVar(&o.window, "stability-window", 0, "stability window of the workflows (0: the default 30m; changes and idle shorten it)")
	flag.DurationVar(&o.watched, "watched-stability-window", 0, "the workflows' window for resources whose objects are all watched (0: the default 10h)")
	flag.DurationVar(&o.idle, "idle", 2*time.Minute, "idle: how long to watch the Reconciled clusters")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (API, Temporal, workers) here")
	flag.Float64Var(&o.rate, "rate", 0, "burst: create at most this many clusters a second (0: as fast as the API answers)")
	flag.Float64Var(&o.handoffRate, "handoff-rate", 0, "production mode: each API replica's --relay-handoff-rate (0: no limit)")
	flag.IntVar(&o.historyShards, "history-shards", 0, "production mode: Temporal's history shards (0: the production shape's default)")
	flag.DurationVar(&o.handoffTarget, "admission-handoff-target", 0, "production mode: admission control's hand-off latency target (0: the default)")
	flag.BoolVar(&o.noAdmission, "no-admission", false, "turn the relay's admission control off (--relay-admission=false), to measure what it prevents")
	flag.IntVar(&o.workers, "workers", 2, "production mode: worker processes (each hosts the reconciler and every adapter)")
	flag.IntVar(&o.adapterWorkers, "adapter-workers", 0, "production mode: host the adapters in this many processes of their own instead of beside the reconciler (as the Helm chart deploys them)")
	flag.IntVar(&o.readers, "reconciliation-readers", 0, "burst: this many REST clients poll GET /clusters/{id}/reconciliation of random clusters from the last create until all are Reconciled (each waits 1 s after a 503)")
	flag.IntVar(&o.watchers, "watchers", 0, "burst: this many REST clients watch /clusters (?watch=true) from before the first create until all are Reconciled: event delay from the change's time on the server")
	flag.StringVar(&o.hyperfleet, "hyperfleet", "", "production mode: the hyperfleet binary the API replicas and workers run (default bin/hyperfleet)")
	flag.Parse()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	err := run(o)
	testenv.StopAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hyperfleet-reconcile-load:", err)
		pprof.StopCPUProfile()
		os.Exit(1) //nolint:gocritic // the CPU profile was stopped just above
	}
}

func run(o options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := loadWorkload(o.workload, o.chainDir)
	if err != nil {
		return err
	}
	defer w.cleanup()
	kube, err := testenv.StartKube()
	if err != nil {
		return fmt.Errorf("a kube-apiserver is needed (make test-tools builds it into bin/): %w", err)
	}
	pods, err := kube.StartPodStandIn(o.podDelay)
	if err != nil {
		return err
	}
	defer pods.Stop()
	env := &bench{o: o, w: w, kube: kube}
	if w.maestro {
		m, err := testenv.StartMaestro()
		if err != nil {
			return fmt.Errorf("a Maestro server is needed (make test-tools builds it into bin/): %w", err)
		}
		if err := m.Register("cluster1"); err != nil {
			return err
		}
		if err := m.Agent("cluster1", kube); err != nil {
			return err
		}
		env.maestro = maestrotransport.Overrides{GRPCAddress: m.GRPCAddr, HTTPAddress: m.HTTPURL}
	}
	fmt.Printf("workload %s (%s), pod stand-in delay %s, GOMAXPROCS=%d, %s\n\n", w.name, strings.Join(w.adapters, ", "),
		o.podDelay, runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	switch o.scenario {
	case "burst":
		return env.burst(ctx)
	case "changes":
		return env.changes(ctx)
	case "idle":
		return env.idleScenario(ctx)
	case "restart":
		return env.restart(ctx)
	case "drift":
		return env.driftScenario(ctx)
	case "single":
		return env.single(ctx)
	}
	return fmt.Errorf("unknown --scenario %q (burst, changes, idle, restart, drift, single)", o.scenario)
}
