// Package topology runs HyperFleet in its production shape on one machine,
// every part its own process: a PostgreSQL cluster, Temporal's own server
// on it as four services (frontend, history, matching, worker) with its
// Web UI, two API replicas on one database and two workers. `hyperfleet
// run-ha` (`make run-ha`) starts it for people; the fault and upgrade
// tests (tests/topology) start it to kill and restart its processes.
//
// Every process is listed, with what restarts it, in processes.json in the
// state directory.
package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/loopback"
	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
	"github.com/hyperfleet/hyperfleet/worker"
)

// Config of the topology. Zero values take the defaults of `make run-ha`.
type Config struct {
	// StateDir holds the PostgreSQL clusters, the configurations, the logs
	// and processes.json; it survives restarts.
	StateDir string
	// Hyperfleet is the hyperfleet binary the API and workers run.
	Hyperfleet string
	// TemporalServer and TemporalSQLTool are Temporal's binaries (make
	// test-tools builds them into bin/).
	TemporalServer  string
	TemporalSQLTool string
	// PostgresBin holds initdb and postgres (default: found).
	PostgresBin string
	// SeparateTemporalDatabase gives Temporal a PostgreSQL cluster of its
	// own (process postgres-temporal), so the two can fail apart.
	SeparateTemporalDatabase bool

	// Ports; 0 picks a free one, except where a default is named.
	PostgresPort         int   // default 5433
	TemporalPostgresPort int   // with SeparateTemporalDatabase
	TemporalPort         int   // the frontend's gRPC port, default 7233
	UIPort               int   // the Web UI's, default 8233; -1: no UI
	APIPorts             []int // one per replica, default 8000 and 8001
	// BalancerPort serves the API replicas behind one address, as a
	// Kubernetes Service would (default 8080): the workers use it.
	BalancerPort int
	// Workers is how many `hyperfleet worker` processes run (default 2).
	Workers int
	// AdapterWorkers, when above 0, moves the adapters out of the
	// workers into that many processes of their own (adapters-1, ...),
	// as the Helm chart deploys them: the reconciler then runs every
	// adapter on its task queue, through Temporal's matching service,
	// instead of as a local activity beside it.
	AdapterWorkers int
	// HistoryShards of the Temporal cluster: 0 keeps the count of an
	// existing database, and gives a new one DefaultHistoryShards. Fixed
	// once the database exists.
	HistoryShards int
	// Namespace of the reconcile workflows (default "default").
	Namespace string
	// AdapterDirs each worker hosts (with KubeAdapterDirs when Kubeconfig
	// is set).
	AdapterDirs     []string
	KubeAdapterDirs []string
	Kubeconfig      string
	// ClusterAdapters and NodePoolAdapters are the API's required
	// adapters (its HYPERFLEET_CLUSTER_ADAPTERS and ..._NODEPOOL_...).
	ClusterAdapters  []string
	NodePoolAdapters []string
	// APIEnv and WorkerEnv are extra HYPERFLEET_* settings of the API
	// replicas and the workers; WorkerArgs extra worker flags.
	APIEnv     []string
	WorkerEnv  []string
	WorkerArgs []string
	// BuildID is the workers' release in the reconciler's worker
	// deployment (default: the binary's own version).
	BuildID string

	Logger zerolog.Logger
}

// Topology is a running production shape.
type Topology struct {
	cfg   Config
	procs []*Process
	byKey map[string]*Process
	mu    sync.Mutex

	pg, pgTemporal *postgresCluster
	temporalAddr   string
	apiURLs        []string
	balancerURL    string
	balancer       *http.Server
	ui             *embeddedtemporal.UI
	workerPorts    []int
	temporalPorts  map[string]temporalPorts
	temporalTLS    TemporalTLS
}

func (c *Config) defaults() error {
	if c.StateDir == "" {
		return errors.New("topology: no state directory")
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return err
	}
	c.StateDir = abs
	for _, f := range []struct {
		name string
		path *string
		how  string
	}{
		{"hyperfleet", &c.Hyperfleet, "make build"},
		{"temporal-server", &c.TemporalServer, "make test-tools"},
		{"temporal-sql-tool", &c.TemporalSQLTool, "make test-tools"},
	} {
		if *f.path == "" {
			return fmt.Errorf("topology: the path of %s is not set", f.name)
		}
		if _, err := os.Stat(*f.path); err != nil {
			return fmt.Errorf("%s not found at %s: build it with `%s`", f.name, *f.path, f.how)
		}
		if *f.path, err = filepath.Abs(*f.path); err != nil {
			return err
		}
	}
	if c.PostgresBin, err = PostgresBinDir(c.PostgresBin); err != nil {
		return err
	}
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.HistoryShards, err = historyShards(c.StateDir, c.HistoryShards); err != nil {
		return err
	}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	return nil
}

// HistoryShards is the Temporal cluster's history shard count.
func (t *Topology) HistoryShards() int { return t.cfg.HistoryShards }

// port is p, or a free loopback port when p is 0.
func port(p int) (int, error) {
	if p != 0 {
		return p, nil
	}
	return loopback.Port()
}

// Start brings the whole shape up, in dependency order, and writes
// processes.json. On error, what was started is stopped again.
func Start(ctx context.Context, cfg Config) (*Topology, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	t := &Topology{cfg: cfg, byKey: map[string]*Process{}}
	if err := t.start(ctx); err != nil {
		t.Stop()
		return nil, err
	}
	return t, nil
}

func (t *Topology) start(ctx context.Context) error {
	cfg := t.cfg
	for _, d := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "logs"), filepath.Join(cfg.StateDir, "config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	log := cfg.Logger

	// PostgreSQL: HyperFleet's database, and Temporal's (the same cluster
	// unless they should fail apart).
	if err := t.startPostgres(ctx); err != nil {
		return err
	}
	log.Info().Str("url", t.pg.logURL("hyperfleet")).Msg("PostgreSQL running")

	// Temporal: certificates, schemas, then the four services, then the
	// namespace.
	var err error
	if t.temporalTLS, err = ensureTemporalTLS(filepath.Join(cfg.StateDir, "tls"), time.Now()); err != nil {
		return err
	}
	if err := t.startTemporal(ctx); err != nil {
		return err
	}
	log.Info().Str("address", t.temporalAddr).Int("history_shards", cfg.HistoryShards).Msg("Temporal running (frontend, history, matching, worker)")
	if cfg.UIPort >= 0 {
		uiPort := cfg.UIPort
		if uiPort == 0 {
			uiPort = 8233
		}
		ui, err := embeddedtemporal.StartUI(embeddedtemporal.UIConfig{
			HostPort: t.temporalAddr, Namespace: cfg.Namespace, Port: uiPort, TLS: t.clientTLSFiles(),
		})
		if err != nil {
			return err
		}
		t.ui = ui
		log.Info().Str("url", t.ui.URL).Msg("Temporal Web UI")
	}

	if err := t.startAPIs(ctx); err != nil {
		return err
	}
	if err := t.startWorkers(ctx); err != nil {
		return err
	}
	if err := t.WriteManifest(); err != nil {
		return err
	}
	log.Info().Strs("api", t.apiURLs).Str("balancer", t.balancerURL).Int("workers", cfg.Workers).
		Str("processes", filepath.Join(cfg.StateDir, "processes.json")).Msg("HyperFleet running")
	return nil
}

func (t *Topology) add(p *Process) *Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.procs = append(t.procs, p)
	t.byKey[p.Name] = p
	return p
}

// launch starts p and waits until it is ready.
func (t *Topology) launch(ctx context.Context, p *Process) error {
	if err := p.start(); err != nil {
		return err
	}
	return t.waitReady(ctx, p, 90*time.Second)
}

// waitReady waits until p answers on its Ready address, failing early when
// it exits.
func (t *Topology) waitReady(ctx context.Context, p *Process, within time.Duration) error {
	if p.Ready == "" {
		return nil
	}
	deadline := time.Now().Add(within)
	exited := p.Exited()
	for {
		if ready(p.Ready) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited while starting (%v); the end of its log (%s):\n%s", p.Name, p.exitErr, p.Log, p.Tail(30))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s within %s; the end of its log (%s):\n%s", p.Name, p.Ready, within, p.Log, p.Tail(30))
		}
	}
}

// ready reports whether a URL answers 2xx, or a host:port accepts a
// connection.
func ready(addr string) bool {
	if strings.HasPrefix(addr, "http") {
		c := http.Client{Timeout: time.Second}
		resp, err := c.Get(addr)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode < 300
	}
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func (t *Topology) startPostgres(ctx context.Context) error {
	cfg := t.cfg
	p := cfg.PostgresPort
	if p == 0 {
		p = 5433
	}
	var err error
	if t.pg, err = newPostgresCluster("postgres", filepath.Join(cfg.StateDir, "postgres"), cfg.PostgresBin, p); err != nil {
		return err
	}
	if err := t.launch(ctx, t.add(t.pg.process(cfg.StateDir))); err != nil {
		return err
	}
	t.pgTemporal = t.pg
	if cfg.SeparateTemporalDatabase {
		tp, err := port(cfg.TemporalPostgresPort)
		if err != nil {
			return err
		}
		if t.pgTemporal, err = newPostgresCluster("postgres-temporal", filepath.Join(cfg.StateDir, "postgres-temporal"), cfg.PostgresBin, tp); err != nil {
			return err
		}
		if err := t.launch(ctx, t.add(t.pgTemporal.process(cfg.StateDir))); err != nil {
			return err
		}
	}
	if err := t.waitDatabase(ctx, t.pg); err != nil {
		return err
	}
	if err := t.pg.secure(ctx); err != nil {
		return err
	}
	if err := t.pg.createDatabases(ctx, "hyperfleet"); err != nil {
		return err
	}
	if err := t.waitDatabase(ctx, t.pgTemporal); err != nil {
		return err
	}
	if err := t.pgTemporal.secure(ctx); err != nil {
		return err
	}
	return t.pgTemporal.createDatabases(ctx, "temporal", "temporal_visibility")
}

// waitDatabase waits until the cluster accepts queries (it listens a
// moment before it has recovered).
func (t *Topology) waitDatabase(ctx context.Context, c *postgresCluster) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(ctx, c.url("postgres"))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not accept queries: %w", c.name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (t *Topology) startTemporal(ctx context.Context) error {
	cfg := t.cfg
	dbs := map[string]string{"temporal": "temporal", "visibility": "temporal_visibility"}
	if err := setupTemporalSchema(ctx, cfg.TemporalSQLTool, t.pgTemporal.port, t.pgTemporal.password, logPath(cfg.StateDir, "temporal-schema"), dbs); err != nil {
		return err
	}
	t.temporalPorts = map[string]temporalPorts{}
	for _, svc := range TemporalServices {
		var ps temporalPorts
		var err error
		grpc := 0
		if svc == "frontend" {
			grpc = cfg.TemporalPort
			if grpc == 0 {
				grpc = 7233
			}
		}
		if ps.GRPC, err = port(grpc); err != nil {
			return err
		}
		if ps.Membership, err = port(0); err != nil {
			return err
		}
		if ps.Metrics, err = port(0); err != nil {
			return err
		}
		t.temporalPorts[svc] = ps
	}
	httpPort, err := port(0)
	if err != nil {
		return err
	}
	files, err := writeTemporalConfigs(filepath.Join(cfg.StateDir, "config"), temporalConfig{
		Shards: cfg.HistoryShards, DBPort: t.pgTemporal.port, DBPassword: t.pgTemporal.password, Database: dbs["temporal"], Visibility: dbs["visibility"],
		Ports: t.temporalPorts, FrontendHTTP: httpPort, TLS: t.temporalTLS,
	})
	if err != nil {
		return err
	}
	t.temporalAddr = fmt.Sprintf("127.0.0.1:%d", t.temporalPorts["frontend"].GRPC)
	// The first service alone: on a new database each service would write
	// the cluster's metadata, and all but one would fail on the duplicate.
	// Then the other three at once; each joins the membership ring through
	// the database.
	for i, svc := range TemporalServices {
		p := t.add(&Process{
			Name: "temporal-" + svc,
			Argv: []string{cfg.TemporalServer, "--config-file", files[svc], "--allow-no-auth", "start", "--service", svc},
			Dir:  cfg.StateDir, Env: environ(), Log: logPath(cfg.StateDir, "temporal-"+svc),
			Ready: fmt.Sprintf("127.0.0.1:%d", t.temporalPorts[svc].GRPC),
		})
		if err := p.start(); err != nil {
			return err
		}
		if i == 0 {
			if err := t.waitReady(ctx, p, 120*time.Second); err != nil {
				return err
			}
		}
	}
	for _, svc := range TemporalServices[1:] {
		if err := t.waitReady(ctx, t.byKey["temporal-"+svc], 120*time.Second); err != nil {
			return err
		}
	}
	c, err := t.dialTemporal(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := registerNamespace(rctx, c, cfg.Namespace, 72*time.Hour); err != nil {
		return err
	}
	// The relay starts workflows with HyperFleet's search attributes, so
	// they must exist before the first API does.
	return worker.EnsureSearchAttributes(rctx, c, cfg.Namespace)
}

// dialTemporal connects a client to the frontend, waiting for it to
// answer.
func (t *Topology) dialTemporal(ctx context.Context) (client.Client, error) {
	tc, err := tlsfiles.ClientConfig(t.clientTLSFiles())
	if err != nil {
		return nil, fmt.Errorf("the client certificate for Temporal: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := client.Dial(client.Options{HostPort: t.temporalAddr, Namespace: t.cfg.Namespace, Logger: quietSDK{},
			ConnectionOptions: client.ConnectionOptions{TLS: tc}})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to Temporal at %s: %w", t.temporalAddr, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

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
	if cfg.BuildID != "" && reconciler {
		argv = append(argv, "--build-id", cfg.BuildID)
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

// Process is the process with that name (nil when there is none).
func (t *Topology) Process(name string) *Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[name]
}

// Processes lists every process in start order.
func (t *Topology) Processes() []*Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Process(nil), t.procs...)
}

// Restart starts a stopped (or killed) process again with what
// processes.json records, waits until it is ready and updates the file.
func (t *Topology) Restart(ctx context.Context, name string) error {
	p := t.Process(name)
	if p == nil {
		return fmt.Errorf("topology: no process %q", name)
	}
	if err := t.launch(ctx, p); err != nil {
		return err
	}
	return t.WriteManifest()
}

// WriteManifest writes processes.json: every process with its pid and
// what restarts it.
func (t *Topology) WriteManifest() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	type entry struct {
		*Process
		PID int `json:"pid"`
	}
	out := make([]entry, 0, len(t.procs))
	for _, p := range t.procs {
		p.mu.Lock()
		pid := p.PID
		p.mu.Unlock()
		out = append(out, entry{Process: p, PID: pid})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	// It holds every process's environment and arguments: the operator's
	// alone to read.
	f := t.ManifestPath()
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // a tmp file left by an older release keeps its mode
		return err
	}
	return os.Rename(tmp, f)
}

// Stop stops everything in the reverse of start order: workers first (they
// drain), then the APIs, Temporal, and PostgreSQL last.
func (t *Topology) Stop() {
	if t.balancer != nil {
		_ = t.balancer.Close()
	}
	if t.ui != nil {
		t.ui.Stop()
	}
	procs := t.Processes()
	for i := len(procs) - 1; i >= 0; i-- {
		grace := 30 * time.Second
		if strings.HasPrefix(procs[i].Name, "worker") {
			grace = 6 * time.Minute // a worker of a replaced release drains first
		}
		if err := procs[i].Stop(grace); err != nil {
			t.cfg.Logger.Warn().Err(err).Msg("process did not stop cleanly")
		}
	}
	if len(procs) > 0 {
		_ = t.WriteManifest()
	}
}

// ManifestPath is processes.json: every process with its pid and what
// restarts it.
func (t *Topology) ManifestPath() string { return filepath.Join(t.cfg.StateDir, "processes.json") }

// TemporalAddress is the Temporal frontend's host:port.
func (t *Topology) TemporalAddress() string { return t.temporalAddr }

// APIURLs are the API replicas' base URLs.
func (t *Topology) APIURLs() []string { return append([]string(nil), t.apiURLs...) }

// BalancerURL serves every API replica behind one address.
func (t *Topology) BalancerURL() string { return t.balancerURL }

// DatabaseURL is HyperFleet's database, with its password.
func (t *Topology) DatabaseURL() string { return t.pg.url("hyperfleet") }

// DatabaseAddress is HyperFleet's database without the password, for
// people and logs; DatabasePasswordFile holds the password.
func (t *Topology) DatabaseAddress() string { return t.pg.logURL("hyperfleet") }

// DatabasePasswordFile is the file that holds the database's password.
func (t *Topology) DatabasePasswordFile() string { return t.pg.passwordFile() }

// TemporalDatabaseURL is Temporal's default store.
func (t *Topology) TemporalDatabaseURL() string { return t.pgTemporal.url("temporal") }

// WorkerMetricsURL is the /metrics of worker i (0-based).
func (t *Topology) WorkerMetricsURL(i int) string {
	return "http://127.0.0.1:" + strconv.Itoa(t.workerPorts[i]) + "/metrics"
}

// TemporalServiceAddress is a Temporal service's gRPC host:port (history,
// matching, frontend, worker).
func (t *Topology) TemporalServiceAddress(service string) string {
	return "127.0.0.1:" + strconv.Itoa(t.temporalPorts[service].GRPC)
}

// TemporalMetricsURL is where a Temporal service (history, matching,
// frontend, worker) serves its Prometheus metrics.
func (t *Topology) TemporalMetricsURL(service string) string {
	return "http://127.0.0.1:" + strconv.Itoa(t.temporalPorts[service].Metrics) + "/metrics"
}

// UIURL is the Temporal Web UI's address ("" without one).
func (t *Topology) UIURL() string {
	if t.ui == nil {
		return ""
	}
	return t.ui.URL
}

// Dial connects a Temporal client to the topology's frontend.
func (t *Topology) Dial(ctx context.Context) (client.Client, error) { return t.dialTemporal(ctx) }

// TemporalTLS names the CA and the certificates of the mutual TLS with
// Temporal; a client of the frontend needs the CA and the client pair.
func (t *Topology) TemporalTLS() TemporalTLS { return t.temporalTLS }

// clientTLSFiles are what HyperFleet's own clients of Temporal present.
func (t *Topology) clientTLSFiles() tlsfiles.Files {
	return tlsfiles.Files{CA: t.temporalTLS.CA, Cert: t.temporalTLS.ClientCert, Key: t.temporalTLS.ClientKey}
}

func jsonList(s []string) string {
	b, _ := json.Marshal(append([]string{}, s...))
	return string(b)
}

// quietSDK silences the Temporal SDK's own logging while the supervisor
// waits for the frontend.
type quietSDK struct{}

func (quietSDK) Debug(string, ...any) {}
func (quietSDK) Info(string, ...any)  {}
func (quietSDK) Warn(string, ...any)  {}
func (quietSDK) Error(string, ...any) {}
