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
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"
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
