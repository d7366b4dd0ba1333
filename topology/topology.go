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
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/loopback"
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
	return writeFile(t.ManifestPath(), append(b, '\n'), 0o600)
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
