// Command hyperfleet-load measures the API under load over loopback: it
// starts the real `hyperfleet serve` binary on a throwaway PostgreSQL or
// SQLite database (or targets --url), seeds clusters and node pools, then
// drives each scenario with a fixed number of closed-loop workers and prints
// requests per second and latency percentiles as a Markdown table for
// docs/benchmarks.md.
//
// Beside the API it runs a bare Gin handler in its own process that answers
// every GET with the bytes of one stored cluster: the ceiling a GET by id
// could reach on this machine in the same run (scenario get-bare).
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
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

type options struct {
	url         string
	binary      string
	db          string
	clusters    int
	nodepools   int
	duration    time.Duration
	concurrency int
	scenarios   string
	profile     string
	idsFile     string
	tenants     int
	watchers    int
	watched     int
	watch       bool
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "API to load (default: start bin/hyperfleet on a throwaway PostgreSQL)")
	flag.StringVar(&o.binary, "binary", "bin/hyperfleet", "hyperfleet binary to start when --url is empty")
	flag.StringVar(&o.db, "db", "postgres", "database of the started server: postgres (throwaway cluster) or sqlite (temporary file)")
	flag.IntVar(&o.clusters, "clusters", 10000, "clusters to seed")
	flag.StringVar(&o.idsFile, "ids", "", "with --clusters 0: read the cluster ids from this file (one a line) instead of listing them")
	flag.IntVar(&o.nodepools, "nodepools", 0, "node pools to seed under each cluster")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "duration of each scenario")
	flag.IntVar(&o.concurrency, "concurrency", 16, "concurrent closed-loop workers")
	flag.StringVar(&o.scenarios, "scenarios", "get-bare,get,list,search,put-status", "scenarios to run: "+strings.Join(scenarioNames, ","))
	flag.IntVar(&o.tenants, "tenants", 0, "run the started server with a gateway-style tenancy file and spread the seeded clusters over this many tenants; requests are a tenant's, status reports a system caller's (0: tenancy off)")
	flag.BoolVar(&o.watch, "watch", false, "start the server with --watch (serve watches, write the change log); --watchers implies it")
	flag.IntVar(&o.watchers, "watchers", 0, "after the scenarios, open this many watches of /clusters and change --watched clusters for --duration: event delay and memory per watcher")
	flag.IntVar(&o.watched, "watched", 100, "with --watchers: how many clusters change, each about once a second")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of the started server during each scenario to this directory (<scenario>.pprof)")
	bareListen := flag.String("bare-serve", "", "internal: serve the bare handler on this address")
	bareBody := flag.String("bare-body", "", "internal: file with the body the bare handler returns")
	flag.Parse()
	if *bareListen != "" {
		if err := serveBare(*bareListen, *bareBody); err != nil {
			fmt.Fprintln(os.Stderr, "hyperfleet-load:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "hyperfleet-load:", err)
		os.Exit(1)
	}
}

// scenarioNames lists the scenarios in the order --scenarios accepts them.
var scenarioNames = []string{"get-bare", "get", "list", "first-page", "deep-page", "deep-offset", "search", "search3", "not-ready", "put-status", "put-status-500",
	"page100", "page100-fields", "page100-gzip"}

// gzipScenarios ask for a compressed answer (Accept-Encoding: gzip) and
// count the compressed bytes.
var gzipScenarios = map[string]bool{"page100-gzip": true}

func run(o options) error {
	ctx := context.Background()
	if o.tenants < 0 || o.tenants > 0 && o.clusters == 0 {
		return fmt.Errorf("--tenants %d: give a positive number of tenants, with --clusters to seed (each cluster's tenant is known from its creation)", o.tenants)
	}
	var srv *server
	if o.url == "" {
		var err error
		if srv, err = startServer(o.binary, o.db, o.profile != "", o.tenants > 0, o.watch || o.watchers > 0); err != nil {
			return err
		}
		defer srv.stop()
		o.url = srv.url
	}
	// No gzip: the figures are the API's own work, as they were before it
	// compressed lists; docs/benchmarks.md has what gzip adds.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency * 2, MaxConnsPerHost: o.concurrency * 2,
		DisableCompression: true}, Timeout: 30 * time.Second}
	l := &loader{client: client, base: o.url + "/api/hyperfleet/v1", tenants: o.tenants}
	ids, deepTokens, err := l.clusterIDs(ctx, o)
	if err != nil {
		return err
	}
	if srv != nil {
		fmt.Printf("hyperfleet serve (%s) RSS after seeding: %s\n", o.db, srv.rss())
	}
	fmt.Println()

	bareBase := ""
	if strings.Contains(o.scenarios, "get-bare") {
		stop, u, err := startBare(ctx, l, ids[0])
		if err != nil {
			return err
		}
		defer stop()
		bareBase = u + "/api/hyperfleet/v1"
	}
	lastPage := (len(ids) + 19) / 20
	if o.tenants > 0 {
		lastPage = (len(ids)/o.tenants + 19) / 20 // one tenant's list
	}
	scenarios := l.scenarios(ids, deepTokens, bareBase, lastPage)
	fmt.Printf("| scenario | requests | errors | req/s | p50 | p90 | p99 | bytes/response | server CPU ms/request |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range strings.Split(o.scenarios, ",") {
		if name == "" {
			continue // --scenarios "": only the watch measurement
		}
		gen, ok := scenarios[name]
		if !ok {
			return fmt.Errorf("unknown scenario %q; known: %s", name, strings.Join(scenarioNames, ","))
		}
		if err := l.runScenario(ctx, o, srv, name, gen); err != nil {
			return err
		}
	}
	if o.watchers > 0 {
		if srv == nil {
			return fmt.Errorf("--watchers measures the server's memory: start it here (no --url)")
		}
		if err := l.watchLoad(ctx, srv, ids, o.watchers, o.watched, o.duration); err != nil {
			return err
		}
	}
	fmt.Printf("\n%d workers, %s per scenario, %d clusters, GOMAXPROCS=%d\n", o.concurrency, o.duration, len(ids), runtime.GOMAXPROCS(0))
	if o.tenants > 0 {
		fmt.Printf("tenancy on: %d tenants of about %d clusters each; lists and searches are one tenant's\n", o.tenants, len(ids)/o.tenants)
	}
	if srv != nil {
		fmt.Printf("hyperfleet serve (%s) RSS at the end: %s\n", o.db, srv.rss())
	}
	return nil
}

// clusterIDs seeds the clusters and node pools o asks for and returns the
// ids of the clusters to load (the seeded ones, --ids', or the listed
// ones), with continuation tokens of deep pages when a scenario needs them.
func (l *loader) clusterIDs(ctx context.Context, o options) (ids, deepTokens []string, err error) {
	start := time.Now()
	ids, err = l.seed(ctx, o.clusters, o.nodepools)
	if err != nil {
		return nil, nil, err
	}
	seedTime := time.Since(start)
	if o.idsFile != "" {
		raw, err := os.ReadFile(o.idsFile)
		if err != nil {
			return nil, nil, err
		}
		ids = strings.Fields(string(raw))
	}
	if o.clusters == 0 && o.idsFile == "" || strings.Contains(o.scenarios, "deep-page") {
		walkCtx := ctx
		if o.tenants > 0 {
			walkCtx = asTenant(ctx, 0) // the deep pages' tokens are tenant 0's
		}
		walked, deep, err := l.walk(walkCtx)
		if err != nil {
			return nil, nil, err
		}
		if o.clusters == 0 && o.idsFile == "" {
			ids = walked
		}
		deepTokens = deep
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("no clusters to load: seed some with --clusters")
	}
	if o.clusters > 0 {
		requests := o.clusters + o.clusters/2*2 + o.clusters*o.nodepools
		fmt.Printf("seeded %d clusters (half of them Ready) and %d node pools in %s: %.0f clusters/s, %.0f requests/s\n", o.clusters, o.clusters*o.nodepools,
			seedTime.Round(time.Millisecond), float64(o.clusters)/seedTime.Seconds(), float64(requests)/seedTime.Seconds())
	}
	return ids, deepTokens, nil
}

// scenarios are the request generators by scenario name, over the clusters
// ids; bareBase is the bare handler's API base and lastPage the last page
// of 20 a caller lists.
func (l *loader) scenarios(ids, deepTokens []string, bareBase string, lastPage int) map[string]func(r *rand.Rand) (string, string, []byte) {
	return map[string]func(r *rand.Rand) (string, string, []byte){
		"get-bare": func(r *rand.Rand) (string, string, []byte) {
			return "GET", bareBase + "/clusters/" + ids[r.IntN(len(ids))], nil
		},
		"get": func(r *rand.Rand) (string, string, []byte) {
			return "GET", l.base + "/clusters/" + ids[r.IntN(len(ids))], nil
		},
		"list": func(r *rand.Rand) (string, string, []byte) {
			return "GET", fmt.Sprintf("%s/clusters?size=20&page=%d", l.base, 1+r.IntN(lastPage)), nil
		},
		"first-page": func(*rand.Rand) (string, string, []byte) {
			return "GET", l.base + "/clusters?size=20", nil
		},
		// The first page of 100 whole, of three fields, and compressed.
		"page100": func(*rand.Rand) (string, string, []byte) {
			return "GET", l.base + "/clusters?size=100", nil
		},
		"page100-fields": func(*rand.Rand) (string, string, []byte) {
			return "GET", l.base + "/clusters?size=100&fields=id,name,status.conditions", nil
		},
		"page100-gzip": func(*rand.Rand) (string, string, []byte) {
			return "GET", l.base + "/clusters?size=100", nil
		},
		"deep-page": func(r *rand.Rand) (string, string, []byte) {
			if len(deepTokens) == 0 { // a list of one page
				return "GET", l.base + "/clusters?size=20", nil
			}
			return "GET", l.base + "/clusters?size=20&pageToken=" + url.QueryEscape(deepTokens[r.IntN(len(deepTokens))]), nil
		},
		"deep-offset": func(r *rand.Rand) (string, string, []byte) {
			return "GET", fmt.Sprintf("%s/clusters?size=20&page=%d", l.base, lastPage-r.IntN(10)), nil
		},
		"search": func(r *rand.Rand) (string, string, []byte) {
			q := fmt.Sprintf("labels.shard='%d' and status.conditions.Ready='True'", r.IntN(16))
			return "GET", l.base + "/clusters?size=20&search=" + url.QueryEscape(q), nil
		},
		"search3": func(r *rand.Rand) (string, string, []byte) {
			q := fmt.Sprintf("labels.shard='%d' and status.conditions.Ready='True' and spec.nodes=%d", r.IntN(16), r.IntN(7))
			return "GET", l.base + "/clusters?size=20&search=" + url.QueryEscape(q), nil
		},
		"not-ready": func(*rand.Rand) (string, string, []byte) {
			// "Everything not Ready": one condition, half the fleet.
			return "GET", l.base + "/clusters?size=20&search=" + url.QueryEscape("status.conditions.Ready='False'"), nil
		},
		"put-status": func(r *rand.Rand) (string, string, []byte) {
			return putStatus(l.base, ids, r)
		},
		"put-status-500": func(r *rand.Rand) (string, string, []byte) {
			return putStatus(l.base, ids, r)
		},
	}
}

// runScenario drives one scenario for o.duration, profiling the started
// server meanwhile when asked, and prints its row of the table.
func (l *loader) runScenario(ctx context.Context, o options, srv *server, name string, gen func(*rand.Rand) (string, string, []byte)) error {
	rate := 0
	if name == "put-status-500" {
		rate = 500
	}
	var profiled chan error
	if o.profile != "" && srv != nil {
		profiled = make(chan error, 1)
		go func() { profiled <- srv.cpuProfile(o.duration, filepath.Join(o.profile, name+".pprof")) }()
	}
	cpuBefore := srv.cpuSeconds()
	res := l.drive(ctx, gen, o.concurrency, o.duration, rate, gzipScenarios[name])
	cpu := "-"
	if srv != nil && res.n > 0 {
		cpu = fmt.Sprintf("%.2f", (srv.cpuSeconds()-cpuBefore)*1000/float64(res.n))
	}
	if profiled != nil {
		if err := <-profiled; err != nil {
			return err
		}
	}
	perResponse := int64(0)
	if res.n > 0 {
		perResponse = res.bytes / int64(res.n)
	}
	fmt.Printf("| %s | %d | %d | %.0f | %s | %s | %s | %d | %s |\n", name, res.n, res.errors, float64(res.n)/res.elapsed.Seconds(),
		ms(res.pct(50)), ms(res.pct(90)), ms(res.pct(99)), perResponse, cpu)
	return nil
}

// cpuSeconds is the server's user and system CPU so far, from
// /proc/<pid>/stat (0 without a started server).
func (s *server) cpuSeconds() float64 {
	if s == nil {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing one (utime and stime are fields 14 and 15).
	rest := string(raw)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

func putStatus(base string, ids []string, r *rand.Rand) (string, string, []byte) {
	adapter := []string{"validation", "landing-zone"}[r.IntN(2)]
	status := []string{"True", "False"}[r.IntN(2)]
	return "PUT", base + "/clusters/" + ids[r.IntN(len(ids))] + "/statuses", statusBody(adapter, status)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// server is a started `hyperfleet serve`.
type server struct {
	url   string
	pprof string
	cmd   *exec.Cmd
	stop  func()
}

// cpuProfile records the server's CPU profile for d into file.
func (s *server) cpuProfile(d time.Duration, file string) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, int(d.Seconds())))
	if err != nil {
		return fmt.Errorf("profile the server: %w", err)
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return fmt.Errorf("profile the server: %w", err)
	}
	return out.Close()
}

// rss reads the server's resident set now and at its peak from /proc.
func (s *server) rss() string {
	fields, err := s.status()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return fmt.Sprintf("%s (peak %s)", fields["VmRSS"], fields["VmHWM"])
}

// status reads the server's /proc status fields ("VmRSS": "1234 kB").
func (s *server) status() (map[string]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields, nil
}

// startServer runs the real binary against a throwaway PostgreSQL database
// or a temporary SQLite file.
func startServer(binary, db string, profile, tenancy, watch bool) (*server, error) {
	var env []string
	var drop func()
	switch db {
	case "postgres":
		dbURL, dropDB, err := testenv.NewPostgresDatabase()
		if err != nil {
			return nil, err
		}
		env = []string{"HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL=" + dbURL, "HYPERFLEET_DB_MAX_OPEN_CONNS=32"}
		drop = func() { dropDB(); testenv.StopAll() }
	case "sqlite":
		dir, err := os.MkdirTemp("", "hyperfleet-load-")
		if err != nil {
			return nil, err
		}
		env = []string{"HYPERFLEET_DB_DRIVER=sqlite", "HYPERFLEET_DB_URL=" + dir + "/hyperfleet.db"}
		drop = func() { os.RemoveAll(dir) }
	default:
		return nil, fmt.Errorf("--db %q: use postgres or sqlite", db)
	}
	if tenancy {
		dir, err := os.MkdirTemp("", "hyperfleet-load-tenancy-")
		if err != nil {
			drop()
			return nil, err
		}
		file, err := writeTenancyFile(dir)
		if err != nil {
			drop()
			return nil, err
		}
		env = append(env, "HYPERFLEET_TENANCY_FILE="+file)
		dropDB := drop
		drop = func() { dropDB(); os.RemoveAll(dir) }
	}
	if watch {
		env = append(env, "HYPERFLEET_WATCH=true")
	}
	addr, err := freeAddr()
	if err != nil {
		drop()
		return nil, err
	}
	pprofAddr := ""
	if profile {
		if pprofAddr, err = freeAddr(); err != nil {
			drop()
			return nil, err
		}
		env = append(env, "HYPERFLEET_PPROF_LISTEN="+pprofAddr)
	}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(append(os.Environ(), env...),
		"HYPERFLEET_LISTEN="+addr,
		`HYPERFLEET_CLUSTER_ADAPTERS=["validation","landing-zone"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=[]",
		"HYPERFLEET_LOG_LEVEL=warn", "HYPERFLEET_LOG_FORMAT=json")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		drop()
		return nil, fmt.Errorf("start %s (run make build first): %w", binary, err)
	}
	s := &server{url: "http://" + addr, pprof: pprofAddr, cmd: cmd, stop: func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_, _ = cmd.Process.Wait()
		drop()
	}}
	if err := waitReady(s.url + "/readyz"); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", binary, err)
	}
	return s, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitReady(u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 30s", u)
}

// startBare fetches one stored cluster and starts this program again as
// the bare handler returning its bytes, in its own process like the API.
func startBare(ctx context.Context, l *loader, id string) (func(), string, error) {
	code, body, err := l.call(ctx, "GET", l.base+"/clusters/"+id, nil)
	if err != nil || code != 200 {
		return nil, "", fmt.Errorf("read the cluster the bare handler returns: %d %v", code, err)
	}
	f, err := os.CreateTemp("", "hyperfleet-bare-*.json")
	if err != nil {
		return nil, "", err
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		return nil, "", err
	}
	f.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, "--bare-serve", addr, "--bare-body", f.Name())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start the bare handler: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		os.Remove(f.Name())
	}
	if err := waitReady("http://" + addr + "/readyz"); err != nil {
		stop()
		return nil, "", fmt.Errorf("bare handler: %w", err)
	}
	return stop, "http://" + addr, nil
}

// serveBare is the ceiling: Gin in release mode, no middleware, one route
// answering with fixed bytes through the same c.Data path a JSON body
// takes.
func serveBare(addr, bodyFile string) error {
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/readyz", func(c *gin.Context) { c.Status(http.StatusOK) })
	r.GET("/api/hyperfleet/v1/clusters/:cluster_id", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	})
	srv := &http.Server{Addr: addr, Handler: r, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

type loader struct {
	client *http.Client
	base   string
	// tenants > 0: the server has a tenancy file (see setCaller).
	tenants int
	owner   owners
}

func (l *loader) call(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	return l.callGzip(ctx, method, u, body, false)
}

// callGzip is call asking, when gzip is set, for a compressed answer; the
// body returned is then the compressed bytes (the transport does not
// decompress what it did not ask for itself).
func (l *loader) callGzip(ctx context.Context, method, u string, body []byte, gzip bool) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	l.setCaller(ctx, req)
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
// one gets True reports from both adapters and becomes Ready. Each cluster
// gets nodepools node pools.
func (l *loader) seed(ctx context.Context, n, nodepools int) ([]string, error) {
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
				cctx := ctx
				if l.tenants > 0 {
					cctx = asTenant(ctx, i%l.tenants)
				}
				code, raw, err := l.call(cctx, "POST", l.base+"/clusters", body)
				if err == nil && code != 201 {
					err = fmt.Errorf("create: %d %s", code, raw)
				}
				if err == nil {
					var r struct{ ID string }
					err = json.Unmarshal(raw, &r)
					ids[i] = r.ID
					if l.tenants > 0 {
						l.owner.set(r.ID, i%l.tenants)
					}
				}
				if err == nil && (i/16)%2 == 0 {
					for _, a := range []string{"validation", "landing-zone"} {
						if code, raw, err = l.call(ctx, "PUT", l.base+"/clusters/"+ids[i]+"/statuses", statusBody(a, "True")); err == nil && code != 201 {
							err = fmt.Errorf("report: %d %s", code, raw)
						}
					}
				}
				for p := 0; err == nil && p < nodepools; p++ {
					body, _ := json.Marshal(map[string]any{
						"kind": "NodePool", "name": fmt.Sprintf("pool-%d", p), "spec": map[string]any{"replicas": 1 + p},
						"labels": map[string]string{"role": "worker"},
					})
					if code, raw, err = l.call(ctx, "POST", l.base+"/clusters/"+ids[i]+"/nodepools", body); err == nil && code != 201 {
						err = fmt.Errorf("create node pool: %d %s", code, raw)
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

// walk reads every cluster through continuation tokens, 100 a page, and
// returns their ids and the tokens of the last ten pages that have one
// (positions in the last 1% of a large list).
func (l *loader) walk(ctx context.Context) (ids, deep []string, err error) {
	next := l.base + "/clusters?size=100"
	page := 1
	for {
		code, raw, err := l.call(ctx, "GET", next, nil)
		if err != nil || code != 200 {
			return nil, nil, fmt.Errorf("list clusters: %d %v %s", code, err, raw)
		}
		var list struct {
			Items         []struct{ ID string }
			NextPageToken string `json:"next_page_token"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, nil, err
		}
		for _, it := range list.Items {
			ids = append(ids, it.ID)
		}
		if list.NextPageToken == "" && len(deep) == 0 && len(list.Items) == 100 {
			// A server from before continuation tokens: page numbers.
			page++
			next = fmt.Sprintf("%s/clusters?size=100&page=%d", l.base, page)
			continue
		}
		if list.NextPageToken == "" {
			return ids, deep, nil
		}
		deep = append(deep, list.NextPageToken)
		if len(deep) > 10 {
			deep = deep[1:]
		}
		next = l.base + "/clusters?size=100&pageToken=" + url.QueryEscape(list.NextPageToken)
	}
}

type result struct {
	n, errors int
	elapsed   time.Duration
	latencies []time.Duration
	// bytes are the response bodies' bytes as received.
	bytes int64
}

func (r result) pct(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies)-1) * p / 100)
	return r.latencies[i]
}

// drive runs workers closed-loop for d; with rate > 0 the workers share an
// open-loop schedule of rate requests per second instead, and latency is
// measured from each request's scheduled start (so queueing counts).
func (l *loader) drive(ctx context.Context, gen func(*rand.Rand) (string, string, []byte), workers int, d time.Duration, rate int, gzip bool) result {
	deadline := time.Now().Add(d)
	var ticket atomic.Int64
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
			var received int64
			for time.Now().Before(deadline) {
				method, u, body := gen(r)
				t0 := time.Now()
				if rate > 0 {
					t0 = start.Add(time.Duration(ticket.Add(1)-1) * time.Second / time.Duration(rate))
					if !t0.Before(deadline) {
						break
					}
					time.Sleep(time.Until(t0))
				}
				code, raw, err := l.callGzip(ctx, method, u, body, gzip)
				lat = append(lat, time.Since(t0))
				received += int64(len(raw))
				if err != nil || code >= 300 && code != 204 {
					errs++
				}
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			res.errors += errs
			res.bytes += received
			mu.Unlock()
		}(uint64(w + 1))
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.n = len(res.latencies)
	sort.Slice(res.latencies, func(i, j int) bool { return res.latencies[i] < res.latencies[j] })
	return res
}
