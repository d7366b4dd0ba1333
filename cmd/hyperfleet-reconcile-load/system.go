package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
	"github.com/hyperfleet/hyperfleet/assembly"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/temporalcost"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/topology"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// bench holds what every scenario shares.
type bench struct {
	o    options
	w    *workload
	kube *testenv.Kube
	// maestro points the adapters at the bench's Maestro server.
	maestro maestrotransport.Overrides
	// notes are printed under the burst table.
	notes []string
}

// system is one HyperFleet under measurement: the embedded stack
// (temporal) or the API with the polling baseline (poll).
type system struct {
	api      *apiClient
	tc       client.Client
	registry *prometheus.Registry
	stop     func()
	// waits are the last cost reading's waits per resource id.
	waits map[string]waits
	// tp is the production shape (mode production); its workers' metrics
	// are read from their /metrics.
	tp *topology.Topology
}

func (b *bench) start(ctx context.Context, mode string, opts reconcile.Options) (*system, error) {
	dir, err := os.MkdirTemp("", "hyperfleet-reconcile-load-")
	if err != nil {
		return nil, err
	}
	var stops []func()
	sys := &system{registry: prometheus.NewRegistry()}
	sys.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		_ = os.RemoveAll(dir)
	}
	fail := func(err error) (*system, error) { sys.stop(); return nil, err }

	apiOpts := apiserver.Options{
		Server:     apiserver.Config{Listen: "127.0.0.1:0"},
		Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(dir, "hyperfleet.db")},
		Registered: map[string][]string{resource.KindCluster: b.w.adapters, resource.KindNodePool: {}},
		// Watches on, as `make run` and `serve` serve them: the change log
		// is part of every write's cost.
		Watch:  watch.Config{Enabled: true},
		Logger: zerolog.Nop(),
	}
	deps := worker.AdapterDeps{Kube: func() (*rest.Config, error) { return b.kube.Config, nil }, Metrics: metrics.New(sys.registry), Logger: zerolog.Nop(),
		Maestro: b.maestro}
	var base string
	switch mode {
	case "temporal":
		srv, err := embeddedtemporal.Start(embeddedtemporal.Config{DatabaseFile: filepath.Join(dir, "temporal.db"), SearchAttributes: reconcile.SearchAttributes()})
		if err != nil {
			return fail(err)
		}
		stops = append(stops, srv.Stop)
		tc, err := srv.Dial(client.Options{Logger: quiet{}})
		if err != nil {
			return fail(err)
		}
		stops = append(stops, tc.Close)
		s, err := assembly.Start(ctx, assembly.Config{API: apiOpts, Temporal: tc, Reconcile: opts, Adapters: b.w.files, AdapterDeps: deps, NoAdmission: b.o.noAdmission, Logger: zerolog.Nop()})
		if err != nil {
			return fail(err)
		}
		stops = append(stops, func() { _ = s.Stop() })
		base, sys.tc = s.URL, tc
	case "production":
		tp, err := b.startProduction(ctx, dir, opts)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, tp.Stop)
		tc, err := tp.Dial(ctx)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, tc.Close)
		base, sys.tc, sys.tp = tp.BalancerURL(), tc, tp
	case "poll":
		app, err := apiserver.Build(ctx, apiOpts)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, func() { _ = app.Close() })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		srvCtx, cancel := context.WithCancel(ctx)
		stops = append(stops, cancel)
		go func() { _ = app.Server.Serve(srvCtx, ln) }()
		base = "http://" + ln.Addr().String()
		deps.APIBaseURL = base
		engines, err := worker.LoadAdapters(b.w.files, deps)
		if err != nil {
			return fail(err)
		}
		go sentinel(srvCtx, base, engines, b.o.pollInterval)
	default:
		return fail(fmt.Errorf("unknown mode %q (temporal, production, poll)", mode))
	}
	sys.api = &apiClient{base: base + resource.BasePath, http: &http.Client{Timeout: 30 * time.Second}, rate: b.o.rate}
	return sys, nil
}

// adapterRuns sums hyperfleet_adapter_runs_total over adapters and outcomes.
func (s *system) adapterRuns() float64 {
	if s.tp != nil {
		var urls []string
		for _, p := range s.tp.Processes() {
			if strings.HasPrefix(p.Name, "worker-") {
				urls = append(urls, s.tp.WorkerMetricsURL(len(urls)))
			}
		}
		return scrapeCounter(urls, "hyperfleet_adapter_runs_total")
	}
	families, err := s.registry.Gather()
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

// cost reads what each resource's workflow has cost so far.
func (s *system) cost(ctx context.Context, kind string, ids []string) (map[string]temporalcost.Cost, error) {
	out := make(map[string]temporalcost.Cost, len(ids))
	s.waits = make(map[string]waits, len(ids))
	var mu sync.Mutex
	errs := make(chan error, len(ids))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			events, err := s.history(ctx, reconcile.WorkflowID(kind, id))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			out[id] = temporalcost.Of(events)
			s.waits[id] = waitsOf(events)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	return out, errors.Join(collect(errs)...)
}

func (s *system) history(ctx context.Context, workflowID string) ([]*historypb.HistoryEvent, error) {
	it := s.tc.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// ---- the API, as a client sees it ----

type apiClient struct {
	base string
	http *http.Client
	// rate bounds the creates a second (0: as fast as answered).
	rate float64
}

func (a *apiClient) do(ctx context.Context, method, path string, body any, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return out, fmt.Errorf("%s %s = %d, want %d: %s", method, path, resp.StatusCode, want, out)
	}
	return out, nil
}

// createClusters POSTs n clusters with concurrency clients and returns
// their ids; with a.rate set, at most that many a second.
func (a *apiClient) createClusters(ctx context.Context, n, concurrency int) ([]string, error) {
	errs := make(chan error, n)
	ids := make([]string, n)
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	stamp := time.Now().UnixNano() % 100000
	var tick <-chan time.Time
	if a.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / a.rate))
		defer t.Stop()
		tick = t.C
	}
	for i := 0; i < n; i++ {
		if tick != nil {
			<-tick
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body := map[string]any{"kind": "Cluster", "name": fmt.Sprintf("load-%d-%d", stamp, i),
				"spec": map[string]any{"platform": map[string]any{"type": "gcp"}, "nodes": 3}, "labels": map[string]string{"shard": fmt.Sprint(i % 16)}}
			out, err := a.do(ctx, http.MethodPost, "/clusters", body, http.StatusCreated)
			if err != nil {
				errs <- err
				return
			}
			var r resource.Resource
			if err := json.Unmarshal(out, &r); err != nil {
				errs <- err
				return
			}
			ids[i] = r.ID
		}()
	}
	wg.Wait()
	close(errs)
	return ids, errors.Join(collect(errs)...)
}

func (a *apiClient) get(ctx context.Context, id string) (resource.Resource, bool, error) {
	var r resource.Resource
	out, err := a.do(ctx, http.MethodGet, "/clusters/"+id, nil, http.StatusOK)
	if err != nil {
		if bytes.Contains(out, []byte(`"status":404`)) {
			return r, false, nil
		}
		return r, false, err
	}
	err = json.Unmarshal(out, &r)
	return r, true, err
}

func (a *apiClient) clusters(ctx context.Context) ([]resource.Resource, error) {
	var all []resource.Resource
	for page := 1; ; page++ {
		out, err := a.do(ctx, http.MethodGet, fmt.Sprintf("/clusters?size=100&page=%d", page), nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		var list resource.List[resource.Resource]
		if err := json.Unmarshal(out, &list); err != nil {
			return nil, err
		}
		all = append(all, list.Items...)
		if len(list.Items) == 0 || int64(len(all)) >= list.Total {
			return all, nil
		}
	}
}

// waitAll polls until every listed cluster satisfies done, or the timeout.
// Every done the scenarios use requires Ready to be True, so the loop
// first waits on two totals the API keeps without counting (all clusters,
// and those whose Ready is True: one request each) and lists every
// cluster only once they agree. Listing all of them each second, as this
// did before, cost the system under test a quadratic amount: at 5,000
// clusters fifty pages a second, each skipping the ones before it.
func (a *apiClient) waitAll(ctx context.Context, timeout time.Duration, what string, done func(*resource.Resource) bool) ([]resource.Resource, error) {
	deadline := time.Now().Add(timeout)
	for {
		expired := time.Now().After(deadline)
		if !expired {
			ready, total, err := a.readyTotals(ctx)
			if err != nil {
				return nil, err
			}
			if ready < total {
				// Latencies come from the server's transition times, not
				// from when this loop notices.
				time.Sleep(time.Second)
				continue
			}
		}
		all, err := a.clusters(ctx)
		if err != nil {
			return nil, err
		}
		n := 0
		for i := range all {
			if done(&all[i]) {
				n++
			}
		}
		if n == len(all) {
			return all, nil
		}
		if expired {
			return nil, fmt.Errorf("%d of %d clusters %s after %s", n, len(all), what, timeout)
		}
		time.Sleep(time.Second)
	}
}

// readyTotals is how many clusters have Ready True, and how many there
// are: two one-item pages whose totals the API reads from its counts.
func (a *apiClient) readyTotals(ctx context.Context) (ready, total int64, err error) {
	if ready, err = a.total(ctx, "/clusters?size=1&fields=id&search="+url.QueryEscape("status.conditions.Ready='True'")); err != nil {
		return 0, 0, err
	}
	if total, err = a.total(ctx, "/clusters?size=1&fields=id"); err != nil {
		return 0, 0, err
	}
	return ready, total, nil
}

// total is the total of a list query's answer.
func (a *apiClient) total(ctx context.Context, query string) (int64, error) {
	out, err := a.do(ctx, http.MethodGet, query, nil, http.StatusOK)
	if err != nil {
		return 0, err
	}
	var list resource.List[resource.Resource]
	if err := json.Unmarshal(out, &list); err != nil {
		return 0, fmt.Errorf("read the total of %s: %w", query, err)
	}
	return list.Total, nil
}

func reconciledAt(gen int64) func(*resource.Resource) bool {
	return func(r *resource.Resource) bool { return r.Generation == gen && isReady(r) }
}

func isReady(r *resource.Resource) bool {
	c, ok := r.Condition(resource.ConditionReady)
	return ok && c.Status == resource.StatusTrue && c.ObservedGeneration == r.Generation
}

// latencies are Ready's last transition minus since(r) for each resource,
// sorted.
func latencies(all []resource.Resource, since func(*resource.Resource) time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(all))
	for i := range all {
		c, _ := all[i].Condition(resource.ConditionReady)
		out = append(out, c.LastTransitionTime.Sub(since(&all[i])))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p/100)]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func collect(c <-chan error) []error {
	var out []error
	for err := range c {
		out = append(out, err)
	}
	return out
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
