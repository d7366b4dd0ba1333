package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/taskconfigs"
	"github.com/hyperfleet/hyperfleet/topology"
)

type runHAFlags struct {
	cfg        topology.Config
	binDir     string
	apiPorts   []int
	kubeconfig string
}

// newRunHACommand starts the production shape on this machine: every part
// its own process (make run-ha).
func newRunHACommand() *cobra.Command {
	var f runHAFlags
	cmd := &cobra.Command{
		Use:   "run-ha",
		Short: "Run the production shape on this machine as separate processes (make run-ha)",
		Long: `Start HyperFleet as production runs it, every part its own process:
a PostgreSQL cluster under --state-dir, Temporal's own server on it as four
services (frontend, history, matching, worker; 512 history shards for a new
state directory) with its Web UI, two API replicas on one database (:8000, :8001) behind a balancer
(:8080, the address the workers use, as a Kubernetes Service would be) and
two workers, each hosting the reconciler and the shipped adapters (plus the
Kubernetes adapters with KUBECONFIG or --kubeconfig).

Temporal's every gRPC port requires mutual TLS: a CA and certificates are
generated at the first start under <state-dir>/tls (keys 0600) and renewed
when they near their end; the startup banner names the files a client such
as 'hyperfleet versions' needs.

<state-dir>/processes.json lists every process with its pid and the argv,
working directory and environment that restart it; logs are in
<state-dir>/logs. Ctrl-C stops everything, workers first. State survives
restarts; delete the folder to start from scratch.

Temporal's binaries come from --bin-dir (make test-tools builds them).`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			// Its APIs run on loopback without authentication or tenancy;
			// a setting of those would not reach them.
			if err := refuseServeOnlyEnv("run-ha", os.LookupEnv); err != nil {
				return err
			}
			return bindEnvPreRun(cmd, args)
		},
		RunE: withLogger(func(ctx context.Context, log zerolog.Logger) error {
			return runHA(ctx, &f, log)
		}),
	}
	fs := cmd.Flags()
	self, _ := os.Executable()
	fs.StringVar(&f.cfg.StateDir, "state-dir", ".hyperfleet-ha", "directory of the databases, configurations, logs and processes.json")
	fs.StringVar(&f.binDir, "bin-dir", filepath.Dir(self), "directory of temporal-server and temporal-sql-tool (make test-tools)")
	fs.StringVar(&f.cfg.PostgresBin, "postgres-bin", "", "directory of initdb and postgres (default: /usr/lib/postgresql/<newest>/bin)")
	fs.IntVar(&f.cfg.PostgresPort, "postgres-port", 5433, "PostgreSQL port on 127.0.0.1")
	fs.IntVar(&f.cfg.TemporalPort, "temporal-port", 7233, "Temporal frontend port on 127.0.0.1")
	fs.IntVar(&f.cfg.UIPort, "ui-port", 8233, "Temporal Web UI port on 127.0.0.1 (-1: no UI)")
	fs.IntSliceVar(&f.apiPorts, "api-ports", []int{8000, 8001}, "one API replica per port")
	fs.IntVar(&f.cfg.BalancerPort, "balancer-port", 8080, "port of the balancer over the API replicas")
	fs.IntVar(&f.cfg.Workers, "workers", 2, "worker processes")
	fs.IntVar(&f.cfg.HistoryShards, "history-shards", 0, fmt.Sprintf("Temporal history shards of a new state directory (0: %d); an existing one keeps its count, which Temporal cannot change", topology.DefaultHistoryShards))
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "cluster for the Kubernetes adapters (default: $KUBECONFIG; without either they stay off)")
	return cmd
}

func runHA(ctx context.Context, f *runHAFlags, log zerolog.Logger) error {
	cfg := f.cfg
	cfg.APIPorts = f.apiPorts
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Hyperfleet = self
	cfg.TemporalServer = filepath.Join(f.binDir, "temporal-server")
	cfg.TemporalSQLTool = filepath.Join(f.binDir, "temporal-sql-tool")
	cfg.Logger = log
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("--state-dir %s: %w", cfg.StateDir, err)
	}
	dirs, err := taskconfigs.Extract(filepath.Join(cfg.StateDir, "taskconfigs"))
	if err != nil {
		return err
	}
	cfg.Kubeconfig = f.kubeconfig
	if cfg.Kubeconfig == "" {
		cfg.Kubeconfig = os.Getenv("KUBECONFIG")
	}
	chooseHAAdapters(&cfg, dirs, log)

	t, err := topology.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer t.Stop()
	api := t.APIURLs()
	fmt.Fprintf(os.Stderr, `
HyperFleet is running in its production shape.
  API          %s/api/hyperfleet/v1   (replicas: %s)
  Balancer     %s   (what the workers call)
  Temporal UI  %s
  Temporal     %s, namespace default, %d history shards, 4 services
               mutual TLS: --temporal-tls-ca %s
                 --temporal-tls-cert %s --temporal-tls-key %s
  PostgreSQL   %s   (password in %s)
  Processes    %s
  Logs         %s
Ctrl-C stops everything.

`, api[0], strings.Join(api, ", "), t.BalancerURL(), orOff(t.UIURL()), t.TemporalAddress(), t.HistoryShards(),
		t.TemporalTLS().CA, t.TemporalTLS().ClientCert, t.TemporalTLS().ClientKey,
		t.DatabaseAddress(), t.DatabasePasswordFile(), filepath.Join(cfg.StateDir, "processes.json"), filepath.Join(cfg.StateDir, "logs"))
	reportExits(ctx, t.Processes(), log)
	<-ctx.Done()
	log.Info().Msg("stopping: workers, APIs, Temporal, PostgreSQL")
	return nil
}

// chooseHAAdapters runs dev's shipped adapters from dirs, and the
// Kubernetes ones too when cfg has a cluster.
func chooseHAAdapters(cfg *topology.Config, dirs map[string]string, log zerolog.Logger) {
	registered := map[string][]string{}
	for kind, names := range devAdapters {
		registered[kind] = append(registered[kind], names...)
		for _, n := range names {
			cfg.AdapterDirs = append(cfg.AdapterDirs, dirs[n])
		}
	}
	if cfg.Kubeconfig != "" {
		for kind, names := range devKubeAdapters {
			registered[kind] = append(registered[kind], names...)
			for _, n := range names {
				cfg.KubeAdapterDirs = append(cfg.KubeAdapterDirs, dirs[n])
			}
		}
	} else {
		log.Info().Msg("no Kubernetes cluster (set KUBECONFIG or --kubeconfig): only the validation adapters run")
	}
	sort.Strings(cfg.AdapterDirs)
	cfg.ClusterAdapters, cfg.NodePoolAdapters = registered[resource.KindCluster], registered[resource.KindNodePool]
}

// reportExits logs each process that dies before ctx ends. A process that
// dies is reported, not restarted: processes.json says how to start it
// again by hand.
func reportExits(ctx context.Context, procs []*topology.Process, log zerolog.Logger) {
	for _, p := range procs {
		go func(p *topology.Process) {
			ch := p.Exited()
			if ch == nil {
				return
			}
			select {
			case <-ch:
				if ctx.Err() == nil {
					log.Error().Str("process", p.Name).Str("log", p.Log).Msg("process exited; see its log, and processes.json to restart it")
				}
			case <-ctx.Done():
			}
		}(p)
	}
}

func orOff(s string) string {
	if s == "" {
		return "(off)"
	}
	return s
}
