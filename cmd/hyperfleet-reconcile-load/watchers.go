package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

// watchers are REST clients watching every cluster (GET
// /clusters?watch=true) while the burst reconciles: a UI or a CLI that
// follows a fleet instead of polling it. Each event's delay is from the
// change's own time on the server (the newest of the resource's
// created_time, updated_time and its conditions' last_updated_time) to its
// arrival; the server's clock is this machine's.
type watchers struct {
	mu     sync.Mutex
	delays []time.Duration
	events atomic.Int64
	opened atomic.Int64
	// ended counts streams the server closed before the test did (a
	// slow consumer dropped, say).
	ended atomic.Int64
	wg    sync.WaitGroup
}

// watchFields are what a watcher asks for: the times the delay is read
// from and the conditions a UI shows, not each cluster's whole spec.
const watchFields = "id,created_time,updated_time,status.conditions"

// watch opens n watches of /clusters and waits until each has answered
// (its headers: the stream is open) or failed; they run until ctx ends,
// then stop returns once all have.
func (a *apiClient) watch(ctx context.Context, n int) (*watchers, error) {
	w := &watchers{}
	// A transport of their own: n long-lived streams, none counted
	// against the creates' connections.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	open := make(chan error, n)
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/clusters?watch=true&fields="+watchFields, nil)
			if err != nil {
				open <- err
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				open <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				open <- fmt.Errorf("watch answered %d", resp.StatusCode)
				return
			}
			w.opened.Add(1)
			open <- nil
			mine := w.read(bufio.NewScanner(resp.Body))
			if ctx.Err() == nil {
				w.ended.Add(1)
			}
			w.mu.Lock()
			w.delays = append(w.delays, mine...)
			w.mu.Unlock()
		}()
	}
	var errs []string
	for range n {
		if err := <-open; err != nil && len(errs) < 3 {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return w, fmt.Errorf("%d of %d watches opened: %s", w.opened.Load(), n, strings.Join(errs, "; "))
	}
	return w, nil
}

// stop waits for the streams to end (their ctx ended).
func (w *watchers) stop() { w.wg.Wait() }

// read returns the delay of every ADDED and MODIFIED event of one stream
// (server-sent events: "data: " lines), until it ends.
func (w *watchers) read(sc *bufio.Scanner) []time.Duration {
	var mine []time.Duration
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		at := time.Now()
		var ev struct {
			Type   string            `json:"type"`
			Object resource.Resource `json:"object"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil || (ev.Type != "ADDED" && ev.Type != "MODIFIED") {
			continue
		}
		mine = append(mine, at.Sub(changedAt(&ev.Object)))
		w.events.Add(1)
	}
	return mine
}

// changedAt is the newest time a resource as watched carries.
func changedAt(r *resource.Resource) time.Time {
	t := r.CreatedTime
	if r.UpdatedTime.After(t) {
		t = r.UpdatedTime
	}
	for _, c := range r.Status.Conditions {
		if c.LastUpdatedTime.After(t) {
			t = c.LastUpdatedTime
		}
	}
	return t
}

// summary is one line for the burst's notes: events, delay percentiles
// and streams the server ended.
func (w *watchers) summary(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.Sort(w.delays)
	at := func(p float64) string { return fmt.Sprintf("%.1f ms", float64(pct(w.delays, p).Microseconds())/1000) }
	return fmt.Sprintf("%d watchers of /clusters (fields=%s): %d events (%.0f a watcher), delay p50 %s, p90 %s, p99 %s, max %s; %d streams ended by the server",
		n, watchFields, w.events.Load(), float64(w.events.Load())/float64(max(n, 1)), at(50), at(90), at(99), at(100), w.ended.Load())
}
