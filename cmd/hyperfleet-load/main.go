// Command hyperfleet-load measures the API under load over loopback: it
// starts a throwaway PostgreSQL and the real `hyperfleet serve` binary (or
// targets --url), seeds clusters, then drives each scenario with a fixed
// number of closed-loop workers and prints requests per second and latency
// percentiles as a Markdown table for docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

type options struct {
	url         string
	binary      string
	clusters    int
	duration    time.Duration
	concurrency int
	scenarios   string
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "API to load (default: start bin/hyperfleet on a throwaway PostgreSQL)")
	flag.StringVar(&o.binary, "binary", "bin/hyperfleet", "hyperfleet binary to start when --url is empty")
	flag.IntVar(&o.clusters, "clusters", 10000, "clusters to seed")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "duration of each scenario")
	flag.IntVar(&o.concurrency, "concurrency", 16, "concurrent closed-loop workers")
	flag.StringVar(&o.scenarios, "scenarios", "get,list,search,put-status", "scenarios to run")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "hyperfleet-load:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx := context.Background()
	if o.url == "" {
		stop, u, err := startServer(o.binary)
		if err != nil {
			return err
		}
		defer stop()
		o.url = u
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency * 2, MaxConnsPerHost: o.concurrency * 2}, Timeout: 30 * time.Second}
	l := &loader{client: client, base: o.url + "/api/hyperfleet/v1"}

	start := time.Now()
	ids, err := l.seed(ctx, o.clusters)
	if err == nil && o.clusters == 0 {
		ids, err = l.existing(ctx)
	}
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("no clusters to load: seed some with --clusters")
	}
	seedTime := time.Since(start)
	fmt.Printf("seeded %d clusters (half of them Ready) in %s: %.0f creates+reports/s\n\n", len(ids), seedTime.Round(time.Millisecond),
		float64(len(ids)+len(ids))/seedTime.Seconds())

	scenarios := map[string]func(r *rand.Rand) (string, string, []byte){
		"get": func(r *rand.Rand) (string, string, []byte) {
			return "GET", l.base + "/clusters/" + ids[r.IntN(len(ids))], nil
		},
		"list": func(r *rand.Rand) (string, string, []byte) {
			return "GET", fmt.Sprintf("%s/clusters?size=20&page=%d", l.base, 1+r.IntN(len(ids)/20)), nil
		},
		"search": func(r *rand.Rand) (string, string, []byte) {
			q := fmt.Sprintf("labels.shard='%d' and status.conditions.Ready='True'", r.IntN(16))
			return "GET", l.base + "/clusters?size=20&search=" + url.QueryEscape(q), nil
		},
		"put-status": func(r *rand.Rand) (string, string, []byte) {
			adapter := []string{"validation", "landing-zone"}[r.IntN(2)]
			status := []string{"True", "False"}[r.IntN(2)]
			return "PUT", l.base + "/clusters/" + ids[r.IntN(len(ids))] + "/statuses", statusBody(adapter, status)
		},
	}
	fmt.Printf("| scenario | requests | errors | req/s | p50 | p90 | p99 |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range strings.Split(o.scenarios, ",") {
		gen, ok := scenarios[name]
		if !ok {
			return fmt.Errorf("unknown scenario %q", name)
		}
		res := l.drive(ctx, gen, o.concurrency, o.duration)
		fmt.Printf("| %s | %d | %d | %.0f | %s | %s | %s |\n", name, res.n, res.errors, float64(res.n)/res.elapsed.Seconds(),
			ms(res.pct(50)), ms(res.pct(90)), ms(res.pct(99)))
	}
	fmt.Printf("\n%d workers, %s per scenario, %d clusters, GOMAXPROCS=%d\n", o.concurrency, o.duration, len(ids), runtime.GOMAXPROCS(0))
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// startServer runs the real binary against a throwaway PostgreSQL database.
func startServer(binary string) (func(), string, error) {
	dbURL, drop, err := testenv.NewPostgresDatabase()
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(),
		"HYPERFLEET_LISTEN="+addr, "HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL="+dbURL,
		`HYPERFLEET_CLUSTER_ADAPTERS=["validation","landing-zone"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=[]",
		"HYPERFLEET_LOG_LEVEL=warn", "HYPERFLEET_LOG_FORMAT=json", "HYPERFLEET_DB_MAX_OPEN_CONNS=32")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		drop()
		return nil, "", fmt.Errorf("start %s (run make build first): %w", binary, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_, _ = cmd.Process.Wait()
		drop()
		testenv.StopAll()
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return stop, "http://" + addr, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return nil, "", fmt.Errorf("%s did not become ready", binary)
}

type loader struct {
	client *http.Client
	base   string
}

func (l *loader) call(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

func statusBody(adapter, available string) []byte {
	b, _ := json.Marshal(map[string]any{
		"adapter": adapter, "observed_generation": 1, "observed_time": time.Now().UTC().Format(time.RFC3339Nano),
		"conditions": []map[string]string{{"type": "Available", "status": available}, {"type": "Applied", "status": "True"}, {"type": "Health", "status": "True"}},
	})
	return b
}

// seed creates n clusters in 16 label shards; in every shard, every other
// one gets True reports from both adapters and becomes Ready.
func (l *loader) seed(ctx context.Context, n int) ([]string, error) {
	ids := make([]string, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				body, _ := json.Marshal(map[string]any{
					"kind": "Cluster", "name": fmt.Sprintf("load-%06d", i), "spec": map[string]any{"nodes": i % 7, "platform": map[string]string{"type": "gcp"}},
					"labels": map[string]string{"shard": fmt.Sprint(i % 16), "environment": []string{"dev", "staging", "production"}[i%3]},
				})
				code, raw, err := l.call(ctx, "POST", l.base+"/clusters", body)
				if err == nil && code != 201 {
					err = fmt.Errorf("create: %d %s", code, raw)
				}
				if err == nil {
					var r struct{ ID string }
					err = json.Unmarshal(raw, &r)
					ids[i] = r.ID
				}
				if err == nil && (i/16)%2 == 0 {
					for _, a := range []string{"validation", "landing-zone"} {
						if code, raw, err = l.call(ctx, "PUT", l.base+"/clusters/"+ids[i]+"/statuses", statusBody(a, "True")); err == nil && code != 201 {
							err = fmt.Errorf("report: %d %s", code, raw)
						}
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return ids, firstErr
}

// existing collects the ids of the clusters already stored (--clusters 0).
func (l *loader) existing(ctx context.Context) ([]string, error) {
	var ids []string
	for page := 1; ; page++ {
		code, raw, err := l.call(ctx, "GET", fmt.Sprintf("%s/clusters?size=100&page=%d", l.base, page), nil)
		if err != nil || code != 200 {
			return nil, fmt.Errorf("list clusters: %d %v", code, err)
		}
		var list struct{ Items []struct{ ID string } }
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		if len(list.Items) == 0 {
			return ids, nil
		}
		for _, it := range list.Items {
			ids = append(ids, it.ID)
		}
	}
}

type result struct {
	n, errors int
	elapsed   time.Duration
	latencies []time.Duration
}

func (r result) pct(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies)-1) * p / 100)
	return r.latencies[i]
}

func (l *loader) drive(ctx context.Context, gen func(*rand.Rand) (string, string, []byte), workers int, d time.Duration) result {
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var res result
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, seed*7919))
			var lat []time.Duration
			errs := 0
			for time.Now().Before(deadline) {
				method, u, body := gen(r)
				t0 := time.Now()
				code, _, err := l.call(ctx, method, u, body)
				lat = append(lat, time.Since(t0))
				if err != nil || code >= 300 && code != 204 {
					errs++
				}
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			res.errors += errs
			mu.Unlock()
		}(uint64(w + 1))
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.n = len(res.latencies)
	sort.Slice(res.latencies, func(i, j int) bool { return res.latencies[i] < res.latencies[j] })
	return res
}
