package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	adaptermetrics "github.com/hyperfleet/hyperfleet/adapter/metrics"
	kubetransport "github.com/hyperfleet/hyperfleet/adapter/transport/kubernetes"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/internal/temporalmetrics"
	"github.com/hyperfleet/hyperfleet/internal/version"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/worker/wake"
)

type workerFlags struct {
	temporal      temporalFlags
	reconciler    bool
	configs       []string
	taskConfigs   []string
	adapterDirs   []string
	refDirs       []string
	apiBaseURL    string
	apiTokenFile  string
	kubeconfig    string
	maxActivities int
	metricsListen string
	wakeInterval  time.Duration
	maestro       maestroFlags
	tracing       tracingFlags
}

func newWorkerCommand() *cobra.Command {
	var f workerFlags
	var fs *pflag.FlagSet
	cmd := &cobra.Command{
		Use:   "worker [--reconciler] [--config adapter-config.yaml --task-config adapter-task-config.yaml]...",
		Short: "Host reconcile workflows and/or adapters on Temporal",
		Long: `Connect to Temporal and host:
  --reconciler       the reconcile workflows (task queue hyperfleet-reconciler),
                     which read resources back from the API at --api-base-url;
  --config/--task-config pairs, or --adapter-dir directories holding both,
                     each adapter's phases on its own task queue
                     (hyperfleet-adapter-<name>), so adapters can run in
                     separate deployments with their own credentials.
One process may host both. Flags repeat; configs and task configs pair up in
order. --api-base-url overrides every adapter's clients.hyperfleet_api.base_url.`,
		Args:    cobra.NoArgs,
		PreRunE: bindEnvPreRun,
		RunE: withLogger(func(ctx context.Context, log zerolog.Logger) error {
			return runWorker(ctx, &f, f.maestro.overrides(fs), log)
		}),
	}
	fs = cmd.Flags()
	f.temporal.add(fs, "127.0.0.1:7233")
	f.maestro.add(fs)
	f.tracing.add(fs, "hyperfleet-worker")
	fs.BoolVar(&f.reconciler, "reconciler", false, "host the reconcile workflows")
	fs.StringArrayVar(&f.configs, "config", nil, "AdapterConfig file (repeatable; pairs with --task-config in order)")
	fs.StringArrayVar(&f.taskConfigs, "task-config", nil, "AdapterTaskConfig file (repeatable)")
	fs.StringArrayVar(&f.adapterDirs, "adapter-dir", nil, "directory holding adapter-config.yaml and adapter-task-config.yaml (repeatable)")
	fs.StringArrayVar(&f.refDirs, "ref-dir", nil, "map a directory that manifest.ref paths name to a local one, MOUNT=DIR (repeatable)")
	fs.StringVar(&f.apiBaseURL, "api-base-url", "", "HyperFleet API address for the reconciler (default http://localhost:8000) and, when set, for every adapter")
	fs.StringVar(&f.apiTokenFile, "api-token-file", "", "bearer token file for the reconciler's reads when the API requires JWTs")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster Kubernetes adapters apply to (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.IntVar(&f.maxActivities, "max-concurrent-activities", 0, "concurrent activities per task queue (0: Temporal's default)")
	fs.StringVar(&f.metricsListen, "metrics-listen", ":9090", "serve /metrics and /healthz here (empty disables)")
	fs.DurationVar(&f.wakeInterval, "wake-interval", wake.DefaultInterval, "least time between two wake-ups of one resource's workflow when objects its adapters manage change")
	return cmd
}

func runWorker(ctx context.Context, f *workerFlags, maestro maestrotransport.Overrides, log zerolog.Logger) error {
	files, err := f.adapterFiles()
	if err != nil {
		return err
	}
	if !f.reconciler && len(files) == 0 {
		return errors.New("nothing to host: pass --reconciler and/or adapters (--config/--task-config or --adapter-dir)")
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Changes to the objects the adapters apply wake the owning workflows;
	// the waker gets its Temporal client once connected.
	waker := wake.New(f.wakeInterval, registry, log.With().Str("component", "wake").Logger())
	deps := worker.AdapterDeps{
		APIBaseURL: f.apiBaseURL, Metrics: adaptermetrics.New(registry), Logger: log,
		// Read once, and only if an adapter applies Kubernetes resources.
		Kube:    sync.OnceValues(func() (*rest.Config, error) { return kubetransport.RESTConfig(f.kubeconfig, 0, 0) }),
		Changes: waker.Notify, WatchContext: ctx, Maestro: maestro,
	}
	engines, err := worker.LoadAdapters(files, deps)
	if err != nil {
		return err
	}
	var api *apiclient.Client
	if f.reconciler {
		base := f.apiBaseURL
		if base == "" {
			base = "http://localhost:8000"
		}
		if api, err = apiclient.New(apiclient.Config{AdapterName: "reconciler", BaseURL: base, TokenPath: f.apiTokenFile,
			RetryAttempts: 1, Timeout: 10 * time.Second}); err != nil {
			return fmt.Errorf("--api-base-url: %w", err)
		}
	}

	tr, err := f.tracing.setup(ctx, log)
	if err != nil {
		return err
	}
	defer shutdownTracing(ctx, tr, log)
	tcfg := f.temporal.cfg
	tcfg.Metrics = temporalmetrics.New(registry)
	if tr.Enabled() {
		tcfg.Tracer = tr.Provider
	}
	tc, err := temporalclient.Dial(tcfg, log.With().Str("component", "temporal").Logger())
	if err != nil {
		return err
	}
	defer tc.Close()
	waker.Attach(tc)
	for {
		err := temporalclient.WaitReachable(ctx, tc, 10*time.Second)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Warn().Err(err).Str("address", f.temporal.cfg.Address).Msg("waiting for Temporal")
	}
	if f.reconciler {
		if err := worker.EnsureSearchAttributes(ctx, tc, f.temporal.cfg.Namespace); err != nil {
			return err
		}
	}
	host, err := worker.Start(worker.Config{
		Client: tc, Reconciler: f.reconciler, API: api, Adapters: engines,
		MaxConcurrentActivities: f.maxActivities, Logger: log,
	})
	if err != nil {
		return err
	}
	defer host.Stop()
	log.Info().Str("version", version.Version).Str("temporal", f.temporal.cfg.Address).
		Str("namespace", f.temporal.cfg.Namespace).Strs("task_queues", host.TaskQueues()).Msg("worker started")
	if f.metricsListen != "" {
		serveMetrics(ctx, f.metricsListen, registry, log)
	}
	<-ctx.Done()
	log.Info().Msg("worker stopping: finishing running activities")
	return nil
}

// adapterFiles pairs --config with --task-config and expands --adapter-dir.
func (f *workerFlags) adapterFiles() ([]worker.AdapterFiles, error) {
	mounts := map[string]string{}
	for _, m := range f.refDirs {
		mount, dir, ok := strings.Cut(m, "=")
		if !ok || mount == "" || dir == "" {
			return nil, fmt.Errorf("--ref-dir %q: write MOUNT=DIR, e.g. /etc/adapter=./my-adapter", m)
		}
		mounts[mount] = dir
	}
	if len(f.configs) != len(f.taskConfigs) {
		return nil, fmt.Errorf("%d --config but %d --task-config: give them in pairs, one --config per --task-config, in the same order", len(f.configs), len(f.taskConfigs))
	}
	var out []worker.AdapterFiles
	for i := range f.configs {
		out = append(out, worker.AdapterFiles{Config: f.configs[i], TaskConfig: f.taskConfigs[i], Mounts: mounts})
	}
	for _, dir := range f.adapterDirs {
		out = append(out, worker.AdapterFiles{
			Config: filepath.Join(dir, "adapter-config.yaml"), TaskConfig: filepath.Join(dir, "adapter-task-config.yaml"), Mounts: mounts,
		})
	}
	return out, nil
}

func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, log zerolog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		log.Info().Str("listen", addr).Msg("worker metrics listening")
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("worker metrics server stopped")
		}
	}()
}
