package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// watchLoad measures watches: n watchers of every cluster (fields=id, so
// the figures are the fan-out's, not the encoding of large resources),
// while writers change the first `changed` clusters' conditions, each
// one about every second, for d. It prints the delay from a change's
// request to each watcher's event (p50/p99), the events lost, and the
// server's resident set per watcher.
func (l *loader) watchLoad(ctx context.Context, srv *server, ids []string, n, changed int, d time.Duration) error {
	if changed > len(ids) {
		changed = len(ids)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}}
	// Every cluster that changes starts from Available=False, so each
	// change below flips a condition and every watcher must see it.
	for _, id := range ids[:changed] {
		if code, body, err := l.call(ctx, http.MethodPut, l.base+"/clusters/"+id+"/statuses", statusBody("validation", "False")); err != nil || code >= 300 {
			return fmt.Errorf("prime %s: %d %s %v", id, code, body, err)
		}
	}
	before := srv.rssKB()

	// sent is when the newest change of each cluster was requested.
	var mu sync.Mutex
	sent := map[string]time.Time{}
	var delays []time.Duration
	var received, opened atomic.Int64
	ready := make(chan struct{}, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.base+"/clusters?watch=true&fields=id", nil)
			resp, err := client.Do(req)
			if err != nil {
				ready <- struct{}{}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				ready <- struct{}{}
				return
			}
			opened.Add(1)
			ready <- struct{}{}
			var mine []time.Duration
			eachModified(resp.Body, func(id string, at time.Time) {
				mu.Lock()
				t0, ok := sent[id]
				mu.Unlock()
				if ok {
					mine = append(mine, at.Sub(t0))
					received.Add(1)
				}
			})
			mu.Lock()
			delays = append(delays, mine...)
			mu.Unlock()
		}()
	}
	for range n {
		<-ready
	}
	if int(opened.Load()) < n {
		return fmt.Errorf("only %d of %d watches opened (raise the server's --watch-max?)", opened.Load(), n)
	}
	time.Sleep(2 * time.Second) // let the streams settle before measuring memory
	withWatchers := srv.rssKB()

	changes, err := l.flipStatuses(ctx, ids[:changed], d, func(id string) {
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
	})
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the last events' delivery
	cancel()
	wg.Wait()

	slices.Sort(delays)
	pct := func(p float64) time.Duration {
		if len(delays) == 0 {
			return 0
		}
		return delays[min(len(delays)-1, int(p*float64(len(delays))))]
	}
	want := changes * int64(n)
	fmt.Printf("\nwatch: %d watchers of /clusters (fields=id), %d changes of %d clusters in %s (one a second each)\n", n, changes, changed, d)
	fmt.Printf("| watchers | changes | events expected | events received | delay p50 | p90 | p99 | max | RSS per watcher |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %d | %d | %d | %s | %s | %s | %s | %.1f KiB |\n", n, changes, want, received.Load(),
		ms(pct(0.5)), ms(pct(0.9)), ms(pct(0.99)), ms(pct(1)), float64(withWatchers-before)/float64(n))
	fmt.Printf("server RSS: %d KiB before the watches, %d KiB with them open, %s at the end\n", before, withWatchers, srv.rss())
	return nil
}

// flipStatuses is the writers: it flips each cluster's Available
// condition about once a second for d, spread evenly, calling sending
// just before each change's request, and returns how many it made.
func (l *loader) flipStatuses(ctx context.Context, ids []string, d time.Duration, sending func(id string)) (int64, error) {
	var changes int64
	tick := time.NewTicker(time.Second / time.Duration(len(ids)))
	defer tick.Stop()
	stopAt := time.Now().Add(d)
	available := map[string]bool{}
	for i := 0; time.Now().Before(stopAt); i++ {
		<-tick.C
		id := ids[i%len(ids)]
		available[id] = !available[id]
		status := map[bool]string{true: "True", false: "False"}[available[id]]
		sending(id)
		code, body, err := l.call(ctx, http.MethodPut, l.base+"/clusters/"+id+"/statuses", statusBody("validation", status))
		if err != nil || code >= 300 {
			return changes, fmt.Errorf("change %s: %d %s %v", id, code, body, err)
		}
		changes++
	}
	return changes, nil
}

// eachModified calls fn with the id of every MODIFIED event of a watch
// stream and the time it arrived, until the stream ends.
func eachModified(stream io.Reader, fn func(id string, at time.Time)) {
	sc := bufio.NewScanner(stream)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		at := time.Now()
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil || ev.Type != "MODIFIED" {
			continue
		}
		fn(ev.Object.ID, at)
	}
}

// rssKB is the server's resident set in KiB (0 when unknown).
func (s *server) rssKB() int64 {
	fields, err := s.status()
	if err != nil {
		return 0
	}
	kb, _ := strconv.ParseInt(strings.TrimSuffix(fields["VmRSS"], " kB"), 10, 64)
	return kb
}
