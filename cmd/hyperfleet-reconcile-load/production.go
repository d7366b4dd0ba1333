package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/internal/loopback"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/topology"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// startProduction runs the workload on the production shape (package
// topology): Temporal's own server as four processes on PostgreSQL, two
// API replicas behind a balancer, --workers worker processes, each
// hosting the reconciler and every adapter of the workload.
func (b *bench) startProduction(ctx context.Context, dir string, opts reconcile.Options) (*topology.Topology, error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return nil, err
	}
	hyperfleet := b.o.hyperfleet
	if hyperfleet == "" {
		hyperfleet = filepath.Join(bin, "hyperfleet")
	}
	state := filepath.Join(dir, "production")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, err
	}
	// PostgreSQL runs as the postgres account when this runs as root.
	for _, d := range []string{dir, state} {
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := loopback.Ports(5)
	if err != nil {
		return nil, err
	}
	cfg := topology.Config{
		StateDir: state, Hyperfleet: hyperfleet,
		TemporalServer: filepath.Join(bin, "temporal-server"), TemporalSQLTool: filepath.Join(bin, "temporal-sql-tool"),
		PostgresPort: ports[0], TemporalPort: ports[1], UIPort: -1, APIPorts: []int{ports[2], ports[3]}, BalancerPort: ports[4],
		Workers: b.o.workers, AdapterWorkers: b.o.adapterWorkers, HistoryShards: b.o.historyShards, Kubeconfig: b.kube.Kubeconfig, ClusterAdapters: b.w.adapters, NodePoolAdapters: []string{},
		BuildID: "bench", Logger: zerolog.Nop(),
	}
	for _, f := range b.w.files {
		cfg.AdapterDirs = append(cfg.AdapterDirs, filepath.Dir(f.Config))
	}
	if opts.StabilityWindow > 0 {
		cfg.APIEnv = append(cfg.APIEnv, "HYPERFLEET_STABILITY_WINDOW="+opts.StabilityWindow.String())
	}
	if opts.WatchedStabilityWindow > 0 {
		cfg.APIEnv = append(cfg.APIEnv, "HYPERFLEET_WATCHED_STABILITY_WINDOW="+opts.WatchedStabilityWindow.String())
	}
	if b.o.handoffTarget > 0 {
		cfg.APIEnv = append(cfg.APIEnv, "HYPERFLEET_RELAY_ADMISSION_HANDOFF_TARGET="+b.o.handoffTarget.String())
	}
	if b.o.noAdmission {
		cfg.APIEnv = append(cfg.APIEnv, "HYPERFLEET_RELAY_ADMISSION=false")
	}
	if b.o.handoffRate > 0 {
		cfg.APIEnv = append(cfg.APIEnv, fmt.Sprintf("HYPERFLEET_RELAY_HANDOFF_RATE=%g", b.o.handoffRate))
	}
	if b.maestro.GRPCAddress != "" {
		cfg.WorkerEnv = append(cfg.WorkerEnv, "HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS="+b.maestro.GRPCAddress,
			"HYPERFLEET_MAESTRO_HTTP_SERVER_ADDRESS="+b.maestro.HTTPAddress, "HYPERFLEET_MAESTRO_INSECURE=true")
	}
	return topology.Start(ctx, cfg)
}

// processCPU is the CPU time (seconds) of each of the topology's
// processes, with their children: PostgreSQL's backends (each in a
// session of its own, so found by parent) while they run, and those that
// ended, which the postmaster has reaped (its cutime and cstime).
func processCPU(tp *topology.Topology) map[string]float64 {
	names := map[int]string{}
	for _, p := range tp.Processes() {
		if p.PID != 0 {
			names[p.PID] = p.Name
		}
	}
	out := map[string]float64{}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range procs {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+2:])
		if len(fields) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		ticks := func(idx ...int) float64 {
			t := 0.0
			for _, j := range idx {
				v, _ := strconv.ParseFloat(fields[j], 64)
				t += v
			}
			return t / 100
		}
		if name, ok := names[pid]; ok {
			out[name] += ticks(11, 12, 13, 14) // its own time and its reaped children's
		} else if name, ok := names[ppid]; ok {
			out[name] += ticks(11, 12)
		}
	}
	return out
}

// component is the part of the system a process belongs to.
func component(process string) string {
	switch {
	case strings.HasPrefix(process, "temporal-"):
		return "Temporal " + strings.TrimPrefix(process, "temporal-")
	case strings.HasPrefix(process, "postgres"):
		return "PostgreSQL"
	case strings.HasPrefix(process, "api-"):
		return "API replicas"
	case strings.HasPrefix(process, "worker-"), strings.HasPrefix(process, "adapters-"):
		return "workers"
	}
	return process
}

// cpuTable prints the CPU each component used between two readings, per
// 1,000 clusters.
func cpuTable(before, after map[string]float64, clusters int, wall time.Duration) string {
	byComponent := map[string]float64{}
	total := 0.0
	for name, v := range after {
		d := v - before[name]
		byComponent[component(name)] += d
		total += d
	}
	names := make([]string, 0, len(byComponent))
	for n := range byComponent {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return byComponent[names[i]] > byComponent[names[j]] })
	var b strings.Builder
	fmt.Fprintf(&b, "| component | CPU-s | CPU-s per 1,000 clusters | share | average cores |\n|---|---:|---:|---:|---:|\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.0f%% | %.2f |\n", n, byComponent[n], byComponent[n]*1000/float64(clusters),
			100*byComponent[n]/total, byComponent[n]/wall.Seconds())
	}
	fmt.Fprintf(&b, "| all | %.1f | %.1f | 100%% | %.2f |\n", total, total*1000/float64(clusters), total/wall.Seconds())
	return b.String()
}

// databaseSizes reads each database's size in bytes.
func databaseSizes(ctx context.Context, url string, names ...string) (map[string]int64, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := map[string]int64{}
	for _, n := range names {
		var size int64
		if err := db.QueryRowContext(ctx, "SELECT pg_database_size($1)", n).Scan(&size); err != nil {
			return nil, fmt.Errorf("size of database %s: %w", n, err)
		}
		out[n] = size
	}
	return out, nil
}

// scrapeCounter sums a counter over every series in the workers' /metrics.
func scrapeCounter(urls []string, name string) float64 {
	total := 0.0
	for _, u := range urls {
		resp, err := http.Get(u) //nolint:gosec // a loopback URL of the topology's
		if err != nil {
			continue
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			continue
		}
		for _, m := range families[name].GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}
