package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	kubetransport "github.com/hyperfleet/hyperfleet/adapter/transport/kubernetes"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
	"github.com/hyperfleet/hyperfleet/assembly"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/loopback"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/internal/version"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/taskconfigs"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// The shipped adapters dev runs, by kind. The Kubernetes ones need a
// cluster; the others only the API.
var (
	devAdapters = map[string][]string{
		resource.KindCluster:  {"validation"},
		resource.KindNodePool: {"nodepool-validation"},
	}
	devKubeAdapters = map[string][]string{
		resource.KindCluster:  {"landing-zone", "validation-job"},
		resource.KindNodePool: {"nodepool-config"},
	}
)

type devFlags struct {
	db           dbFlags
	reconcile    reconcileFlags
	listen       string
	temporalPort int
	uiPort       int
	kubeconfig   string
	taskconfigs  string
	kinds        kindsFlag
	// flags tells a flag given from one left at its default.
	flags *pflag.FlagSet
	// clusterAdapters and nodePoolAdapters replace the default choice
	// when set (flag given).
	clusterAdapters  []string
	nodePoolAdapters []string
	// clusterOptional and nodePoolOptional are run as optional adapters
	// (in addition to a kinds file's optional_adapters).
	clusterOptional  []string
	nodePoolOptional []string
	maestro          maestroFlags
	maestroSet       maestrotransport.Overrides
	tracing          tracingFlags
}

func newDevCommand() *cobra.Command {
	var f devFlags
	var fs *pflag.FlagSet
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole system in one process (make run)",
		Long: `Start, in one process: an embedded Temporal server persisted under
--state-dir with its Web UI, the API on SQLite, the outbox relay, the
reconcile worker and the shipped adapters.

Without a Kubernetes cluster only the adapters that need none run
(validation, nodepool-validation). With KUBECONFIG set, or --kubeconfig, the
Kubernetes adapters run against that cluster too (landing-zone,
validation-job, nodepool-config).`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseServeOnlyEnv("dev", os.LookupEnv); err != nil {
				return err
			}
			if err := bindEnv(cmd); err != nil {
				return err
			}
			return f.reconcile.validate()
		},
		RunE: withLogger(func(ctx context.Context, log zerolog.Logger) error {
			f.maestroSet = f.maestro.overrides(fs)
			return runDev(ctx, &f, log)
		}),
	}
	fs = cmd.Flags()
	f.flags = fs
	f.maestro.add(fs)
	f.tracing.add(fs, "hyperfleet")
	f.db.add(fs)
	f.reconcile.add(fs)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8000", "address of the API; it has no authentication, so other hosts reach it only when asked for (e.g. --listen :8000)")
	fs.IntVar(&f.temporalPort, "temporal-port", 7233, "port of the embedded Temporal frontend on 127.0.0.1")
	fs.IntVar(&f.uiPort, "ui-port", 8233, "port of the Temporal Web UI on 127.0.0.1 (0: no UI)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "cluster for the Kubernetes adapters (default: $KUBECONFIG; without either they stay off)")
	fs.StringVar(&f.taskconfigs, "taskconfigs", "", "directory of adapter directories (each holding adapter-config.yaml and adapter-task-config.yaml) to take adapters from instead of the shipped ones")
	fs.StringSliceVar(&f.clusterAdapters, "cluster-adapters", nil, "adapters to run and register for clusters, by directory name (default: validation, plus landing-zone and validation-job with a cluster)")
	f.kinds.add(fs)
	fs.StringSliceVar(&f.nodePoolAdapters, "nodepool-adapters", nil, "adapters to run and register for node pools (default: nodepool-validation, plus nodepool-config with a cluster)")
	fs.StringSliceVar(&f.clusterOptional, "cluster-optional-adapters", nil, "adapters to run for clusters as optional: they report but never decide readiness or removal")
	fs.StringSliceVar(&f.nodePoolOptional, "nodepool-optional-adapters", nil, "adapters to run for node pools as optional")
	return cmd
}

// serveOnlyEnv are settings of `hyperfleet serve` that the embedded
// stack does not take: authentication and tenancy. Set for dev, they
// would be ignored, and a user would believe the API protected.
var serveOnlyEnv = []string{"HYPERFLEET_TENANCY_FILE", "HYPERFLEET_JWT_ENABLED", "HYPERFLEET_JWT_ISSUER", "HYPERFLEET_JWT_JWKS_URL",
	"HYPERFLEET_JWT_JWKS_FILE", "HYPERFLEET_JWT_ISSUERS_FILE"}

// refuseServeOnlyEnv refuses a serve-only setting in the environment of
// command (dev, run-ha), which runs its API without them.
func refuseServeOnlyEnv(command string, lookup func(string) (string, bool)) error {
	for _, name := range serveOnlyEnv {
		if v, ok := lookup(name); ok && v != "" {
			return fmt.Errorf("%s is set, but hyperfleet %s runs its API on loopback without authentication or tenancy: "+
				"unset it, or run the API with `hyperfleet serve` (the Helm chart) to use it", name, command)
		}
	}
	return nil
}

func runDev(ctx context.Context, f *devFlags, log zerolog.Logger) error {
	state := f.db.stateDir
	if err := os.MkdirAll(state, 0o755); err != nil {
		return fmt.Errorf("--state-dir %s: %w", state, err)
	}
	storeCfg, err := f.db.config()
	if err != nil {
		return err
	}
	kube, kubeSource, err := devKube(ctx, f.kubeconfig)
	if err != nil {
		return err
	}
	dirs, err := devAdapterDirs(f.taskconfigs, state)
	if err != nil {
		return err
	}
	kinds, err := f.kinds.load(f.flags, log)
	if err != nil {
		return err
	}
	adapters, err := chooseDevAdapters(f, kinds, dirs, kube != nil)
	if err != nil {
		return err
	}
	logDevKube(f, kube, kubeSource, log)

	srv, uiURL, stopTemporal, err := startDevTemporal(f, state)
	if err != nil {
		return err
	}
	defer stopTemporal()
	tr, err := f.tracing.setup(ctx, log)
	if err != nil {
		return err
	}
	defer shutdownTracing(ctx, tr, log)
	var tracer trace.TracerProvider
	if tr.Enabled() {
		tracer = tr.Provider
	}
	tc, err := dialDevTemporal(srv, tracer, log)
	if err != nil {
		return err
	}
	defer tc.Close()

	var kubeFn func() (*rest.Config, error)
	if kube != nil {
		kubeFn = func() (*rest.Config, error) { return kube, nil }
	}
	s, err := assembly.Start(ctx, assembly.Config{
		API: apiserver.Options{
			Server:     apiserver.Config{Listen: f.listen, Version: version.Version, BuildTime: version.BuildTime, Tracer: tracer},
			Store:      storeCfg,
			Kinds:      kinds,
			Registered: adapters.registered,
			Optional:   adapters.optional,
			// One process on SQLite, whose writers are serial anyway: the
			// change log costs little here (docs/benchmarks.md, "Watches").
			Watch:  watch.Config{Enabled: true},
			Logger: log,
		},
		Temporal: tc, Namespace: srv.Namespace(), TemporalUIURL: uiURL, ReconciliationReadsPerSecond: f.reconcile.reconciliationReads,
		Reconcile: f.reconcile.opts, RelaySweep: f.reconcile.sweep, RelayResyncRate: f.reconcile.resyncRate, RelayHandoffRate: f.reconcile.handoff, NoAdmission: !f.reconcile.admission, AdmissionHandoffTarget: f.reconcile.handoffTarget,
		Adapters: adapters.files,
		AdapterDeps: worker.AdapterDeps{Kube: kubeFn, Maestro: f.maestroSet,
			KubeMissing: "set KUBECONFIG or pass --kubeconfig"},
		Logger: log,
	})
	if err != nil {
		return err
	}
	printWelcome(s.URL, uiURL, srv.HostPort(), state, adapters.registered, tr.Enabled())
	select {
	case <-ctx.Done():
	case <-s.Failed():
	}
	log.Info().Msg("stopping")
	return s.Stop()
}

// devAdapterSet is what dev hosts and registers: each adapter's files once
// (one adapter may serve several kinds), and the adapters of each kind.
type devAdapterSet struct {
	files      []worker.AdapterFiles
	registered map[string][]string
	optional   map[string][]string

	dirs   map[string]string
	source string // where dirs come from, for errors
	kinds  []string
	loaded map[string]bool
}

// chooseDevAdapters picks the required and optional adapters of each kind
// and finds their files in dirs. haveKube says a cluster is configured.
func chooseDevAdapters(f *devFlags, kinds *resource.Kinds, dirs map[string]string, haveKube bool) (*devAdapterSet, error) {
	a := &devAdapterSet{registered: map[string][]string{}, optional: map[string][]string{},
		dirs: dirs, source: f.taskconfigs, kinds: kinds.Names(), loaded: map[string]bool{}}
	for _, kind := range a.kinds {
		a.registered[kind] = []string{}
	}
	if a.source == "" {
		a.source = "the shipped adapters"
	}
	if err := a.add(devRequired(f, kinds, haveKube), a.registered); err != nil {
		return nil, err
	}
	if err := a.add(devOptional(f, kinds), a.optional); err != nil {
		return nil, err
	}
	return a, nil
}

// add records the adapters of set under each kind in into, and their
// files once each.
func (a *devAdapterSet) add(set, into map[string][]string) error {
	for _, kind := range a.kinds {
		for _, name := range set[kind] {
			dir, ok := a.dirs[name]
			if !ok {
				return fmt.Errorf("adapter %s not found in %s: it needs a directory %s holding adapter-config.yaml and adapter-task-config.yaml", name, a.source, name)
			}
			into[kind] = append(into[kind], name)
			if !a.loaded[name] {
				a.loaded[name] = true
				a.files = append(a.files, worker.AdapterFiles{Config: filepath.Join(dir, "adapter-config.yaml"), TaskConfig: filepath.Join(dir, "adapter-task-config.yaml")})
			}
		}
	}
	return nil
}

// devRequired is the default choice per kind: the adapters that need no
// cluster, plus the Kubernetes ones when there is a cluster. A flag
// replaces it; an adapter that needs a cluster without one then fails to
// load and says so. A kind of a kinds file runs the adapters the file
// requires.
func devRequired(f *devFlags, kinds *resource.Kinds, haveKube bool) map[string][]string {
	chosen := map[string][]string{}
	for _, k := range kinds.All() {
		if _, shipped := devAdapters[k.Kind]; !shipped {
			chosen[k.Kind] = k.RequiredAdapters
			continue
		}
		chosen[k.Kind] = append([]string{}, devAdapters[k.Kind]...)
		if haveKube {
			chosen[k.Kind] = append(chosen[k.Kind], devKubeAdapters[k.Kind]...)
		}
	}
	if f.clusterAdapters != nil {
		chosen[resource.KindCluster] = f.clusterAdapters
	}
	if f.nodePoolAdapters != nil {
		chosen[resource.KindNodePool] = f.nodePoolAdapters
	}
	return chosen
}

// devOptional is the optional adapters per kind: a kinds file's, and the
// flags' for clusters and node pools (a flag replaces the file's list, as
// for required ones).
func devOptional(f *devFlags, kinds *resource.Kinds) map[string][]string {
	chosen := map[string][]string{}
	for _, k := range kinds.All() {
		chosen[k.Kind] = k.OptionalAdapters
	}
	if f.clusterOptional != nil {
		chosen[resource.KindCluster] = f.clusterOptional
	}
	if f.nodePoolOptional != nil {
		chosen[resource.KindNodePool] = f.nodePoolOptional
	}
	return chosen
}

// logDevKube says whether the Kubernetes adapters can run, and how to
// turn them on when they cannot and a default choice would have run them.
func logDevKube(f *devFlags, kube *rest.Config, kubeSource string, log zerolog.Logger) {
	switch {
	case kube != nil:
		log.Info().Str("cluster", kube.Host).Str("from", kubeSource).Msg("Kubernetes adapters can run (landing-zone, validation-job, nodepool-config)")
	case f.clusterAdapters == nil || f.nodePoolAdapters == nil:
		log.Warn().Msg("Kubernetes adapters off (landing-zone, validation-job, nodepool-config): no cluster configured. " +
			"Set KUBECONFIG or pass --kubeconfig to run them, e.g. KUBECONFIG=~/.kube/config make run")
	}
}

// startDevTemporal starts the embedded Temporal server persisted under
// state, and its Web UI unless --ui-port is 0; stop stops both.
func startDevTemporal(f *devFlags, state string) (srv *embeddedtemporal.Server, uiURL string, stop func(), err error) {
	// The embedded server picks its internal ports itself; keep it off the
	// ones this command will bind next.
	loopback.Avoid(portOf(f.listen), f.uiPort)
	srv, err = embeddedtemporal.Start(embeddedtemporal.Config{
		DatabaseFile:     filepath.Join(state, "temporal.db"),
		Port:             f.temporalPort,
		SearchAttributes: reconcile.SearchAttributes(),
		LogFile:          filepath.Join(state, "temporal.log"),
	})
	if err != nil {
		return nil, "", nil, err
	}
	if f.uiPort == 0 {
		return srv, "", srv.Stop, nil
	}
	ui, err := srv.StartUI(f.uiPort)
	if err != nil {
		srv.Stop()
		return nil, "", nil, err
	}
	return srv, ui.URL, func() { ui.Stop(); srv.Stop() }, nil
}

// dialDevTemporal connects to the embedded server, tracing through tracer
// when it is set.
func dialDevTemporal(srv *embeddedtemporal.Server, tracer trace.TracerProvider, log zerolog.Logger) (client.Client, error) {
	topts := client.Options{Logger: temporalclient.Logger(log.With().Str("component", "temporal").Logger())}
	if tracer != nil {
		ti, err := temporalclient.TracingInterceptor(tracer)
		if err != nil {
			return nil, err
		}
		topts.Interceptors = append(topts.Interceptors, ti)
	}
	return srv.Dial(topts)
}

// devKube finds the cluster for the Kubernetes adapters: --kubeconfig, else
// $KUBECONFIG, else none. A configured cluster that does not answer is an
// error, not a silent fallback.
func devKube(ctx context.Context, flag string) (*rest.Config, string, error) {
	path, source := flag, "--kubeconfig"
	if path == "" {
		path, source = os.Getenv("KUBECONFIG"), "KUBECONFIG"
	}
	if path == "" {
		return nil, "", nil
	}
	cfg, err := kubetransport.RESTConfig(path, 0, 0)
	if err != nil {
		return nil, "", fmt.Errorf("%s=%s: %w", source, path, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, "", fmt.Errorf("%s=%s: %w", source, path, err)
	}
	check := make(chan error, 1)
	go func() { _, err := dc.ServerVersion(); check <- err }()
	select {
	case err = <-check:
	case <-time.After(10 * time.Second):
		err = fmt.Errorf("no answer from %s within 10s", cfg.Host)
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s=%s: cluster %s unreachable: %w (unset it to run without the Kubernetes adapters)", source, path, cfg.Host, err)
	}
	return cfg, source + "=" + path, nil
}

// devAdapterDirs finds each adapter's directory: under --taskconfigs, or
// the shipped adapters extracted into the state directory.
func devAdapterDirs(root, state string) (map[string]string, error) {
	if root == "" {
		return taskconfigs.Extract(filepath.Join(state, "taskconfigs"))
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("--taskconfigs: %w", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()] = filepath.Join(root, e.Name())
		}
	}
	return out, nil
}

func printWelcome(apiURL, uiURL, temporal, state string, registered map[string][]string, tracingOn bool) {
	traces := "off; set HYPERFLEET_OTEL_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT) to an OTLP/gRPC collector"
	if tracingOn {
		traces = "on, one trace per change from the HTTP request to the adapters' status reports"
	}
	host, port, _ := net.SplitHostPort(apiURL[len("http://"):])
	if host == "127.0.0.1" {
		host = "localhost"
	}
	api := "http://" + net.JoinHostPort(host, port)
	ui := uiURL
	if ui == "" {
		ui = "(off)"
	}
	fmt.Fprintf(os.Stderr, `
HyperFleet is running.
  API          %s/api/hyperfleet/v1   (OpenAPI: %s/api/hyperfleet/v1/openapi.html)
  Temporal UI  %s   (workflows: hyperfleet-cluster-<id>, hyperfleet-nodepool-<id>)
  Temporal     %s, namespace default
  State        %s (delete it to start from scratch)
  Adapters     clusters: %v, node pools: %v

Try:
  curl -s -X POST %s/api/hyperfleet/v1/clusters -H 'Content-Type: application/json' -d '{"kind":"Cluster","name":"demo","spec":{"platform":{"type":"aws"},"nodes":3}}'
  curl -s %s/api/hyperfleet/v1/clusters | jq '.items[] | {id, generation, ready: (.status.conditions[] | select(.type=="Ready") | .status)}'

Dashboard: deploy/helm/hyperfleet/dashboards/hyperfleet.json
  (import it in Grafana; docs/operator-guide.md, "Dashboard").
Tracing: %s
  (settings, spans and attributes: docs/operator-guide.md, "Tracing").

Press Ctrl-C to stop.
`, api, api, ui, temporal, state, registered[resource.KindCluster], registered[resource.KindNodePool], api, api, traces)
}

// portOf is the port of a listen address (0 when it has none).
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
