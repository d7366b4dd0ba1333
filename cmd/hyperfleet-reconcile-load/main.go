// Command hyperfleet-reconcile-load measures end-to-end reconciliation: the
// time from POST /clusters to Ready=True, and clusters reconciled per
// second, for a batch of clusters with three adapters (validation,
// landing-zone, validation-job) applying to a real kube-apiserver.
//
// It runs the same workload two ways and prints both as a Markdown table for
// docs/benchmarks.md:
//
//   - temporal: the embedded stack of `hyperfleet dev` (SQLite API, embedded
//     Temporal on SQLite, relay, reconcile workflows, adapter activities);
//   - poll: the upstream design's timing, a Sentinel that lists clusters
//     every --poll-interval (5s upstream) and runs every adapter for each
//     cluster not yet Reconciled, with the same adapter engines.
//
// Latency is read from the API itself: Ready's last_transition_time minus
// the cluster's created_time, so the driver's own polling adds nothing.
// There are no nodes: the driver stands in for the Job controller and marks
// each validation Job complete as soon as it exists.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/stack"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/taskconfigs"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

var adapters = []string{"validation", "landing-zone", "validation-job"}

type options struct {
	clusters     int
	concurrency  int
	modes        string
	pollInterval time.Duration
	timeout      time.Duration
	cpuProfile   string
}

func main() {
	var o options
	flag.IntVar(&o.clusters, "clusters", 200, "clusters to create")
	flag.IntVar(&o.concurrency, "concurrency", 20, "concurrent POSTs")
	flag.StringVar(&o.modes, "modes", "temporal,poll", "what to measure: temporal, poll")
	flag.DurationVar(&o.pollInterval, "poll-interval", 5*time.Second, "the polling baseline's interval (the upstream Sentinel's default is 5s)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up waiting for Ready after this long")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (API, Temporal, workers) here")
	flag.Parse()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "hyperfleet-reconcile-load:", err)
		testenv.StopAll()
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	testenv.StopAll()
}

func run(o options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube, err := testenv.StartKube()
	if err != nil {
		return fmt.Errorf("a kube-apiserver is needed (make test-tools builds it into bin/): %w", err)
	}
	go completeJobs(ctx, kube)
	dirs, err := taskconfigs.Extract(filepath.Join(os.TempDir(), fmt.Sprintf("hyperfleet-reconcile-load-%d", os.Getpid())))
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(dirs["validation"]))

	fmt.Printf("| mode | clusters | adapters | POST→Ready p50 | p90 | p99 | max | clusters/s | adapter runs/cluster |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range strings.Split(o.modes, ",") {
		res, err := measure(ctx, mode, o, kube, dirs)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		label := mode
		if mode == "poll" {
			label = fmt.Sprintf("poll every %s", o.pollInterval)
		}
		fmt.Printf("| %s | %d | %d | %s | %s | %s | %s | %.1f | %.1f |\n", label, len(res.latencies), len(adapters),
			secs(res.pct(50)), secs(res.pct(90)), secs(res.pct(99)), secs(res.pct(100)), res.throughput,
			res.adapterRuns/float64(len(res.latencies)))
	}
	fmt.Printf("\n%d clusters created by %d concurrent clients; GOMAXPROCS=%d\n", o.clusters, o.concurrency, runtime.GOMAXPROCS(0))
	return nil
}

type result struct {
	latencies  []time.Duration
	throughput float64
	// adapterRuns counts complete adapter runs (params to post), the work
	// each mode spends per cluster.
	adapterRuns float64
}

func (r result) pct(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies)-1) * p / 100)
	return r.latencies[i]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// measure builds a fresh system, creates the clusters and waits for all of
// them to be Ready.
func measure(ctx context.Context, mode string, o options, kube *testenv.Kube, dirs map[string]string) (result, error) {
	dir, err := os.MkdirTemp("", "hyperfleet-reconcile-load-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	registered := map[string][]string{resource.KindCluster: adapters, resource.KindNodePool: {}}
	var files []worker.AdapterFiles
	for _, a := range adapters {
		files = append(files, worker.AdapterFiles{Config: filepath.Join(dirs[a], "adapter-config.yaml"), TaskConfig: filepath.Join(dirs[a], "adapter-task-config.yaml")})
	}
	apiOpts := apiserver.Options{
		Server:     apiserver.Config{Listen: "127.0.0.1:0"},
		Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(dir, "hyperfleet.db")},
		Registered: registered,
		Logger:     zerolog.Nop(),
	}
	reg := prometheus.NewRegistry()
	deps := worker.AdapterDeps{Kube: func() (*rest.Config, error) { return kube.Config, nil }, Metrics: metrics.New(reg), Logger: zerolog.Nop()}

	var base string
	switch mode {
	case "temporal":
		srv, err := embeddedtemporal.Start(embeddedtemporal.Config{DatabaseFile: filepath.Join(dir, "temporal.db"), SearchAttributes: reconcile.SearchAttributes()})
		if err != nil {
			return result{}, err
		}
		defer srv.Stop()
		tc, err := srv.Dial(client.Options{Logger: quiet{}})
		if err != nil {
			return result{}, err
		}
		defer tc.Close()
		s, err := stack.Start(ctx, stack.Config{API: apiOpts, Temporal: tc, Adapters: files, AdapterDeps: deps, Logger: zerolog.Nop()})
		if err != nil {
			return result{}, err
		}
		defer s.Stop()
		base = s.URL
	case "poll":
		app, err := apiserver.Build(ctx, apiOpts)
		if err != nil {
			return result{}, err
		}
		defer app.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return result{}, err
		}
		srvCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() { _ = app.Server.Serve(srvCtx, ln) }()
		base = "http://" + ln.Addr().String()
		deps.APIBaseURL = base
		engines, err := worker.LoadAdapters(files, deps)
		if err != nil {
			return result{}, err
		}
		go sentinel(srvCtx, base, engines, o.pollInterval)
	default:
		return result{}, fmt.Errorf("unknown mode %q (temporal, poll)", mode)
	}

	api := &apiClient{base: base + resource.BasePath, http: &http.Client{Timeout: 30 * time.Second}}
	if err := api.createClusters(ctx, o.clusters, o.concurrency); err != nil {
		return result{}, err
	}
	deadline := time.Now().Add(o.timeout)
	for {
		all, err := api.clusters(ctx)
		if err != nil {
			return result{}, err
		}
		readyCount := 0
		for i := range all {
			if isReady(&all[i]) {
				readyCount++
			}
		}
		if readyCount == len(all) {
			res := summarize(all)
			res.adapterRuns = countRuns(reg)
			return res, nil
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("%d of %d clusters Ready after %s", readyCount, len(all), o.timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// countRuns sums hyperfleet_adapter_runs_total over adapters and outcomes.
func countRuns(reg *prometheus.Registry) float64 {
	families, err := reg.Gather()
	if err != nil {
		return 0
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "hyperfleet_adapter_runs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

func isReady(r *resource.Resource) bool {
	c, ok := r.Condition(resource.ConditionReady)
	return ok && c.Status == resource.StatusTrue && c.ObservedGeneration == r.Generation
}

func summarize(all []resource.Resource) result {
	var res result
	var first, last time.Time
	for i := range all {
		c, _ := all[i].Condition(resource.ConditionReady)
		res.latencies = append(res.latencies, c.LastTransitionTime.Sub(all[i].CreatedTime))
		if first.IsZero() || all[i].CreatedTime.Before(first) {
			first = all[i].CreatedTime
		}
		if c.LastTransitionTime.After(last) {
			last = c.LastTransitionTime
		}
	}
	sort.Slice(res.latencies, func(i, j int) bool { return res.latencies[i] < res.latencies[j] })
	res.throughput = float64(len(all)) / last.Sub(first).Seconds()
	return res
}

// sentinel is the polling baseline: every interval it lists the clusters and
// runs every adapter for each one not Reconciled, as upstream's Sentinel
// publishing to a broker that the adapters consume would.
func sentinel(ctx context.Context, base string, engines []*executor.Engine, interval time.Duration) {
	api := &apiClient{base: base + resource.BasePath, http: &http.Client{Timeout: 30 * time.Second}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		all, err := api.clusters(ctx)
		if err != nil {
			continue
		}
		sem := make(chan struct{}, 16*len(engines))
		var wg sync.WaitGroup
		for i := range all {
			if isReady(&all[i]) {
				continue
			}
			ev := map[string]any{"id": all[i].ID, "kind": all[i].Kind, "href": all[i].Href, "generation": all[i].Generation}
			for _, eng := range engines {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					_, _ = eng.Run(ctx, ev)
				}()
			}
		}
		wg.Wait()
	}
}

// completeJobs stands in for the Job controller (there are no nodes): every
// validation Job is marked complete as soon as it exists.
func completeJobs(ctx context.Context, kube *testenv.Kube) {
	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		w, err := cs.BatchV1().Jobs("").Watch(ctx, metav1.ListOptions{LabelSelector: "hyperfleet.io/resource-type=validation-job"})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok || job.Status.Succeeded > 0 || job.DeletionTimestamp != nil {
				continue
			}
			_ = kube.CompleteJob(ctx, job.Namespace, job.Name, true)
		}
	}
}

type apiClient struct {
	base string
	http *http.Client
}

func (a *apiClient) createClusters(ctx context.Context, n, concurrency int) error {
	errs := make(chan error, n)
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	stamp := time.Now().UnixNano()
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body := fmt.Sprintf(`{"kind":"Cluster","name":"load-%d-%d","spec":{"platform":{"type":"gcp"},"nodes":3}}`, stamp%100000, i)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/clusters", bytes.NewBufferString(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := a.http.Do(req)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("POST /clusters = %d: %s", resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(c <-chan error) []error {
	var out []error
	for err := range c {
		out = append(out, err)
	}
	return out
}

func (a *apiClient) clusters(ctx context.Context) ([]resource.Resource, error) {
	var all []resource.Resource
	for page := 1; ; page++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/clusters?size=100&page=%d", a.base, page), nil)
		resp, err := a.http.Do(req)
		if err != nil {
			return nil, err
		}
		var list resource.List[resource.Resource]
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, list.Items...)
		if len(list.Items) == 0 || int64(len(all)) >= list.Total {
			return all, nil
		}
	}
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
