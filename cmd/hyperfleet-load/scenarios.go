package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"time"
)

// scenarioNames lists the scenarios in the order --scenarios accepts them.
var scenarioNames = []string{"get-bare", "get", "list", "first-page", "deep-page", "deep-offset", "search", "search3", "not-ready", "put-status", "put-status-500",
	"page100", "page100-fields", "page100-gzip"}

// gzipScenarios ask for a compressed answer (Accept-Encoding: gzip) and
// count the compressed bytes.
var gzipScenarios = map[string]bool{"page100-gzip": true}

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

func putStatus(base string, ids []string, r *rand.Rand) (string, string, []byte) {
	adapter := []string{"validation", "landing-zone"}[r.IntN(2)]
	status := []string{"True", "False"}[r.IntN(2)]
	return "PUT", base + "/clusters/" + ids[r.IntN(len(ids))] + "/statuses", statusBody(adapter, status)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func statusBody(adapter, available string) []byte {
	b, _ := json.Marshal(map[string]any{
		"adapter": adapter, "observed_generation": 1, "observed_time": time.Now().UTC().Format(time.RFC3339Nano),
		"conditions": []map[string]string{{"type": "Available", "status": available}, {"type": "Applied", "status": "True"}, {"type": "Health", "status": "True"}},
	})
	return b
}
