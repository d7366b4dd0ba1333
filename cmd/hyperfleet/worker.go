package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	adaptermetrics "github.com/hyperfleet/hyperfleet/adapter/metrics"
	kubetransport "github.com/hyperfleet/hyperfleet/adapter/transport/kubernetes"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/internal/systemsecret"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/internal/temporalmetrics"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
	"github.com/hyperfleet/hyperfleet/internal/version"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/worker/versioning"
	"github.com/hyperfleet/hyperfleet/worker/wake"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
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
	systemHeader  string
	systemSecret  string
	kubeconfig    string
	maxActivities int
	metricsListen string
	wakeInterval  time.Duration
	maestro       maestroFlags
	tracing       tracingFlags
	rollout       rolloutFlags
}

// rolloutFlags make the reconciler a version of a Temporal worker
// deployment, so a new release takes over live workflows without
// replaying them (package versioning).
type rolloutFlags struct {
	deployment   string
	buildID      string
	promote      string
	drainTimeout time.Duration
	noticeRate   float64
	// workflow replaces the reconcile workflow in a test build only
	// (rehearsal.go); nil: the plain one.
	workflow func(workflow.Context, reconcile.Input) error
}

func (r *rolloutFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&r.deployment, "deployment-name", versioning.DefaultDeployment, "Temporal worker deployment the reconciler is a version of")
	fs.StringVar(&r.buildID, "build-id", defaultBuildID(), "this release's version in the deployment (e.g. the image tag); reconcile workflows stay on the version they started on and move to a newer current one between rounds; empty: unversioned")
	fs.StringVar(&r.promote, "promote", string(versioning.PromoteFirst), "when this worker makes --build-id the deployment's current version, telling the previous version's workflows to move: first (only when none is current: a fresh install; later releases wait for `hyperfleet versions set-current` or `rollout`), new (whenever it was never current before: a rolling update of one Deployment) or never")
	fs.DurationVar(&r.drainTimeout, "drain-timeout", 5*time.Minute, "on stop, when another version is current, keep serving until this version's workflows have moved to it, at most this long (0: stop at once)")
	fs.Float64Var(&r.noticeRate, "upgrade-notice-rate", 200, "upgrade notices a second sent to the workflows of a replaced version")
	addRehearsalFlag(fs, r)
}

func (r *rolloutFlags) version() (versioning.Version, versioning.Policy, error) {
	v := versioning.Version{Deployment: r.deployment, BuildID: r.buildID}
	if r.buildID != "" && r.deployment == "" {
		return v, "", errors.New("--build-id needs --deployment-name")
	}
	policy, err := versioning.ParsePolicy(r.promote)
	if err != nil {
		return v, "", err
	}
	return v, policy, v.Validate()
}

// defaultBuildID is the binary's version, unless it has none (a plain `go
// build`): a build id that stays the same while the code changes would pin
// workflows to a version whose code is not what they ran.
func defaultBuildID() string {
	if version.Version == "" || version.Version == "dev" {
		return ""
	}
	return version.Version
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
	f.rollout.add(fs)
	fs.BoolVar(&f.reconciler, "reconciler", false, "host the reconcile workflows")
	fs.StringArrayVar(&f.configs, "config", nil, "AdapterConfig file (repeatable; pairs with --task-config in order)")
	fs.StringArrayVar(&f.taskConfigs, "task-config", nil, "AdapterTaskConfig file (repeatable)")
	fs.StringArrayVar(&f.adapterDirs, "adapter-dir", nil, "directory holding adapter-config.yaml and adapter-task-config.yaml (repeatable)")
	fs.StringArrayVar(&f.refDirs, "ref-dir", nil, "map a directory that manifest.ref paths name to a local one, MOUNT=DIR (repeatable)")
	fs.StringVar(&f.apiBaseURL, "api-base-url", "", "HyperFleet API address for the reconciler (default http://localhost:8000) and, when set, for every adapter")
	fs.StringVar(&f.apiTokenFile, "api-token-file", "", "bearer token file for the reconciler's and every adapter's API calls when the API requires JWTs (with tenancy: a system identity's token); re-read on every call, so it may be rotated in place")
	fs.StringVar(&f.systemHeader, "api-system-header", "", "send this header, carrying the secret of --api-system-secret-file, on every API call of the reconciler and the adapters (to the API's origin only): the system_header of the API's tenancy file")
	fs.StringVar(&f.systemSecret, "api-system-secret-file", "", "file holding the system secret --api-system-header carries: the file the API's tenancy file names in system_secret_file; read at start")
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
	ver, policy, err := f.rollout.version()
	if err != nil {
		return err
	}
	if !f.reconciler {
		ver = versioning.Version{} // adapters are never versioned
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Changes to the objects the adapters apply wake the owning workflows;
	// the waker gets its Temporal client once connected.
	waker := wake.New(f.wakeInterval, registry, log.With().Str("component", "wake").Logger())
	headers, err := f.apiHeaders()
	if err != nil {
		return err
	}
	deps := worker.AdapterDeps{
		APIBaseURL: f.apiBaseURL, APITokenFile: f.apiTokenFile, APIHeaders: headers, Metrics: adaptermetrics.New(registry), Logger: log,
		// Read once, and only if an adapter applies Kubernetes resources.
		Kube:    sync.OnceValues(func() (*rest.Config, error) { return kubetransport.RESTConfig(f.kubeconfig, 0, 0) }),
		Changes: waker.Notify, WatchContext: ctx, Maestro: maestro,
	}
	engines, err := worker.LoadAdapters(files, deps)
	if err != nil {
		return err
	}
	api, err := f.reconcilerAPI(headers)
	if err != nil {
		return err
	}

	tr, err := f.tracing.setup(ctx, log)
	if err != nil {
		return err
	}
	defer shutdownTracing(ctx, tr, log)
	tc, err := f.dialTemporal(tr, registry, log)
	if err != nil {
		return err
	}
	defer tc.Close()
	waker.Attach(tc)
	if !waitForTemporal(ctx, tc, f.temporal.cfg.Address, log) {
		return nil
	}
	if f.reconciler {
		if err := worker.EnsureSearchAttributes(ctx, tc, f.temporal.cfg.Namespace); err != nil {
			return err
		}
	}
	host, err := worker.Start(worker.Config{
		Client: tc, Reconciler: f.reconciler, API: api, Adapters: engines, Version: ver,
		Workflow: f.rollout.workflow, MaxConcurrentActivities: f.maxActivities, Logger: log,
	})
	if err != nil {
		return err
	}
	defer host.Stop()
	ev := log.Info().Str("version", version.Version).Str("temporal", f.temporal.cfg.Address).
		Str("namespace", f.temporal.cfg.Namespace).Strs("task_queues", host.TaskQueues())
	if ver.Versioned() {
		ev = ev.Str("deployment_version", ver.String())
	}
	ev.Msg("worker started")
	f.serveUntilDone(ctx, tc, ver, policy, registry, log)
	log.Info().Msg("worker stopping: finishing running activities")
	return nil
}

// apiHeaders are the headers every API call of the reconciler and the
// adapters carries: --api-system-header with the secret of
// --api-system-secret-file, when given. Either without the other is
// refused: a header without its secret makes no system caller.
func (f *workerFlags) apiHeaders() ([][2]string, error) {
	switch {
	case f.systemHeader == "" && f.systemSecret == "":
		return nil, nil
	case f.systemSecret == "":
		return nil, fmt.Errorf("--api-system-header %s needs --api-system-secret-file (HYPERFLEET_API_SYSTEM_SECRET_FILE): the file the API's tenancy file names in system_secret_file; the header alone makes no system caller", f.systemHeader)
	case f.systemHeader == "":
		return nil, errors.New("--api-system-secret-file needs --api-system-header (HYPERFLEET_API_SYSTEM_HEADER): the system_header of the API's tenancy file, e.g. X-HyperFleet-System")
	case !validHeaderName(f.systemHeader):
		return nil, fmt.Errorf("--api-system-header %q is not a header name: use letters, digits and '-', e.g. X-HyperFleet-System", f.systemHeader)
	}
	secret, err := systemsecret.Read(f.systemSecret)
	if err != nil {
		return nil, fmt.Errorf("--api-system-secret-file: %w; %s", err, systemsecret.Fix)
	}
	return [][2]string{{f.systemHeader, secret.Value()}}, nil
}

// reconcilerAPI is the reconciler's client of the API; nil without
// --reconciler.
func (f *workerFlags) reconcilerAPI(headers [][2]string) (*apiclient.Client, error) {
	if !f.reconciler {
		return nil, nil
	}
	base := f.apiBaseURL
	if base == "" {
		base = "http://localhost:8000"
	}
	api, err := apiclient.New(apiclient.Config{AdapterName: "reconciler", BaseURL: base, TokenPath: f.apiTokenFile, Headers: headers,
		RetryAttempts: 1, Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("--api-base-url: %w", err)
	}
	return api, nil
}

// dialTemporal connects to Temporal, with the client's metrics in registry
// and tracing through tr when it is enabled.
func (f *workerFlags) dialTemporal(tr *tracing.Tracing, registry *prometheus.Registry, log zerolog.Logger) (client.Client, error) {
	tcfg := f.temporal.cfg
	tcfg.Metrics = temporalmetrics.New(registry)
	if tr.Enabled() {
		tcfg.Tracer = tr.Provider
	}
	return temporalclient.Dial(tcfg, log.With().Str("component", "temporal").Logger())
}

// waitForTemporal waits until Temporal answers, saying so every 10s; false
// when ctx ends first.
func waitForTemporal(ctx context.Context, tc client.Client, address string, log zerolog.Logger) bool {
	for {
		err := temporalclient.WaitReachable(ctx, tc, 10*time.Second)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		log.Warn().Err(err).Str("address", address).Msg("waiting for Temporal")
	}
}

// serveUntilDone serves the metrics and readiness, makes its version
// current as the policy says, and on stop, while still polling, moves this version's
// workflows to the current one.
func (f *workerFlags) serveUntilDone(ctx context.Context, tc client.Client, ver versioning.Version, policy versioning.Policy, registry *prometheus.Registry, log zerolog.Logger) {
	// Ready once polling and, for a new version, made current: a rolling
	// update stops the old release's workers only then.
	var ready atomic.Bool
	if f.metricsListen != "" {
		serveMetrics(ctx, f.metricsListen, registry, ready.Load, log)
	}
	rollLog := log.With().Str("component", "versioning").Logger()
	if ver.Versioned() && policy == versioning.PromoteNever {
		rollLog.Info().Str("version", ver.String()).Msg("this worker declares its version and does not promote it (--promote never): `hyperfleet versions set-current " + ver.BuildID + "` does")
	}
	if ver.Versioned() && policy != versioning.PromoteNever {
		go func() {
			versioning.Start(ctx, tc, ver, policy, f.rollout.noticeRate, rollLog)
			ready.Store(true)
		}()
	} else {
		ready.Store(true)
	}
	<-ctx.Done()
	if ver.Versioned() {
		// Still polling: only this version's workers can move its
		// workflows to the current one.
		versioning.Stop(context.WithoutCancel(ctx), tc, ver, f.rollout.drainTimeout, f.rollout.noticeRate, rollLog)
	}
}

// validHeaderName reports an RFC 9110 token, what a header name may be.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
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

// serveMetrics serves /metrics, /healthz (alive) and /readyz (what ready
// says: the worker polls and its version is decided).
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, ready func() bool, log zerolog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "starting: this version is not decided yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
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
