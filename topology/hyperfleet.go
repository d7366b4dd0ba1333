// The HyperFleet processes of the shape: the API replicas behind their
// balancer, and the workers.

package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

func (t *Topology) startAPIs(ctx context.Context) error {
	cfg := t.cfg
	ports := cfg.APIPorts
	if len(ports) == 0 {
		ports = []int{8000, 8001}
	}
	for i, p := range ports {
		p, err := port(p)
		if err != nil {
			return err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", p)
		name := fmt.Sprintf("api-%d", i+1)
		env := environ(append([]string{
			"HYPERFLEET_LISTEN=" + fmt.Sprintf("127.0.0.1:%d", p),
			"HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL=" + t.pg.url("hyperfleet"),
			"HYPERFLEET_TEMPORAL_ADDRESS=" + t.temporalAddr, "HYPERFLEET_TEMPORAL_NAMESPACE=" + cfg.Namespace,
			"HYPERFLEET_TEMPORAL_TLS_CA=" + t.temporalTLS.CA,
			"HYPERFLEET_TEMPORAL_TLS_CERT=" + t.temporalTLS.ClientCert, "HYPERFLEET_TEMPORAL_TLS_KEY=" + t.temporalTLS.ClientKey,
			"HYPERFLEET_CLUSTER_ADAPTERS=" + jsonList(cfg.ClusterAdapters), "HYPERFLEET_NODEPOOL_ADAPTERS=" + jsonList(cfg.NodePoolAdapters),
			"HYPERFLEET_LOG_FORMAT=json",
		}, cfg.APIEnv...)...)
		proc := t.add(&Process{Name: name, Argv: []string{cfg.Hyperfleet, "serve"}, Dir: cfg.StateDir, Env: env,
			Log: logPath(cfg.StateDir, name), Ready: base + "/readyz?exclude=workflow-engine"})
		// One at a time: the first applies the schema migrations.
		if err := t.launch(ctx, proc); err != nil {
			return err
		}
		t.apiURLs = append(t.apiURLs, base)
	}
	b, err := NewBalancer(t.apiURLs)
	if err != nil {
		return err
	}
	bp := cfg.BalancerPort
	if bp == 0 {
		bp = 8080
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", bp))
	if err != nil {
		return fmt.Errorf("API balancer port %d: %w", bp, err)
	}
	t.balancerURL = "http://" + ln.Addr().String()
	t.balancer = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = t.balancer.Serve(ln) }()
	return nil
}

func (t *Topology) startWorkers(ctx context.Context) error {
	cfg := t.cfg
	dirs := append([]string{}, cfg.AdapterDirs...)
	if cfg.Kubeconfig != "" {
		dirs = append(dirs, cfg.KubeAdapterDirs...)
	}
	beside := dirs
	if cfg.AdapterWorkers > 0 {
		beside = nil
	}
	for i := 0; i < cfg.Workers; i++ {
		if err := t.startWorker(ctx, fmt.Sprintf("worker-%d", i+1), true, beside); err != nil {
			return err
		}
	}
	for i := 0; i < cfg.AdapterWorkers; i++ {
		if err := t.startWorker(ctx, fmt.Sprintf("adapters-%d", i+1), false, dirs); err != nil {
			return err
		}
	}
	return nil
}

// startWorker starts one `hyperfleet worker`, hosting the reconciler or
// not, and the adapters of dirs.
func (t *Topology) startWorker(ctx context.Context, name string, reconciler bool, dirs []string) error {
	cfg := t.cfg
	mp, err := port(0)
	if err != nil {
		return err
	}
	t.workerPorts = append(t.workerPorts, mp)
	argv := []string{cfg.Hyperfleet, "worker", "--api-base-url", t.balancerURL,
		"--temporal-address", t.temporalAddr, "--temporal-namespace", cfg.Namespace,
		"--temporal-tls-ca", t.temporalTLS.CA,
		"--temporal-tls-cert", t.temporalTLS.ClientCert, "--temporal-tls-key", t.temporalTLS.ClientKey,
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mp), "--log-format", "json"}
	if reconciler {
		argv = append(argv, "--reconciler")
	}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		argv = append(argv, "--adapter-dir", abs)
	}
	if cfg.Kubeconfig != "" && len(dirs) > 0 {
		argv = append(argv, "--kubeconfig", cfg.Kubeconfig)
	}
	if reconciler {
		if cfg.BuildID != "" {
			argv = append(argv, "--build-id", cfg.BuildID)
		}
		// run-ha upgrades by restarting every process on the new binary:
		// no step runs between the new workers' start and the old ones'
		// stop, so the new ones promote themselves (the old drain on
		// stop only once another version is current).
		argv = append(argv, "--promote", "new")
	}
	argv = append(argv, cfg.WorkerArgs...)
	p := t.add(&Process{Name: name, Argv: argv, Dir: cfg.StateDir, Env: environ(cfg.WorkerEnv...),
		Log: logPath(cfg.StateDir, name), Ready: fmt.Sprintf("http://127.0.0.1:%d/readyz", mp)})
	return t.launch(ctx, p)
}

// AddWorker starts one more worker process with the same settings as the
// others plus args (a new release's --build-id, say), named name. A
// hyperfleet binary other than "" runs in place of the others' (a new
// release's).
func (t *Topology) AddWorker(ctx context.Context, name, hyperfleet string, args ...string) (*Process, error) {
	base := t.byKey["worker-1"]
	if base == nil {
		return nil, errors.New("topology: no worker-1 to copy")
	}
	mp, err := port(0)
	if err != nil {
		return nil, err
	}
	argv := append([]string{}, base.Argv...)
	if hyperfleet != "" {
		argv[0] = hyperfleet
	}
	for i, a := range argv {
		if a == "--metrics-listen" {
			argv[i+1] = fmt.Sprintf("127.0.0.1:%d", mp)
		}
	}
	argv = append(argv, args...)
	p := t.add(&Process{Name: name, Argv: argv, Dir: base.Dir, Env: base.Env, Log: logPath(t.cfg.StateDir, name),
		Ready: fmt.Sprintf("http://127.0.0.1:%d/readyz", mp)})
	if err := t.launch(ctx, p); err != nil {
		return nil, err
	}
	return p, t.WriteManifest()
}

// APIURLs are the API replicas' base URLs.
func (t *Topology) APIURLs() []string { return append([]string(nil), t.apiURLs...) }

// BalancerURL serves every API replica behind one address.
func (t *Topology) BalancerURL() string { return t.balancerURL }

// WorkerMetricsURL is the /metrics of worker i (0-based).
func (t *Topology) WorkerMetricsURL(i int) string {
	return "http://127.0.0.1:" + strconv.Itoa(t.workerPorts[i]) + "/metrics"
}

func jsonList(s []string) string {
	b, _ := json.Marshal(append([]string{}, s...))
	return string(b)
}
