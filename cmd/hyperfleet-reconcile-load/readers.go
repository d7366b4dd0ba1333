package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// readers are REST clients asking why their clusters are not Ready yet
// (GET .../reconciliation, which reads the workflow's state from
// Temporal) while the burst reconciles: what a UI or a CLI polling a fleet
// does. They measure the endpoint's answers under load and, set beside a
// burst without them, whether they slow the reconcile.
type readers struct {
	mu    sync.Mutex
	by    map[int][]time.Duration // latency by status code
	waits []time.Duration         // the Retry-After of each 503
	start time.Time
	wall  time.Duration
	wg    sync.WaitGroup
}

// readReconciliation starts n callers, each asking for a random cluster
// of ids in a loop, until ctx ends; stop waits for them.
func (a *apiClient) readReconciliation(ctx context.Context, ids []string, n int) *readers {
	r := &readers{by: map[int][]time.Duration{}, start: time.Now()}
	for range n {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for ctx.Err() == nil {
				id := ids[rand.IntN(len(ids))]
				t0 := time.Now()
				code, wait := a.status(ctx, "/clusters/"+id+"/reconciliation")
				if ctx.Err() != nil {
					return
				}
				r.mu.Lock()
				r.by[code] = append(r.by[code], time.Since(t0))
				if code == http.StatusServiceUnavailable {
					r.waits = append(r.waits, wait)
				}
				r.mu.Unlock()
				if code == http.StatusServiceUnavailable {
					// As a client honouring Retry-After does.
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
			}
		}()
	}
	return r
}

// status is the HTTP status of a GET (0 when it failed without one) and
// the wait its Retry-After names (1 s when it names none); the body is
// read and dropped.
func (a *apiClient) status(ctx context.Context, path string) (int, time.Duration) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return 0, time.Second
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, time.Second
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"))
}

// retryAfter is a Retry-After of whole seconds as a wait: 1 s when it is
// absent or not a number of seconds from 1 to 300.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 300 {
		return time.Second
	}
	return time.Duration(n) * time.Second
}

func (r *readers) stop() {
	r.wg.Wait()
	r.wall = time.Since(r.start)
}

// summary is one line: requests a second, and per status code its share
// and latency p50/p99.
func (r *readers) summary(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	codes := make([]int, 0, len(r.by))
	for c, l := range r.by {
		total += len(l)
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		l := slices.Clone(r.by[c])
		slices.Sort(l)
		parts = append(parts, fmt.Sprintf("%d: %.1f%% (p50 %s, p99 %s)", c, 100*float64(len(l))/float64(total),
			pct(l, 50).Round(100*time.Microsecond), pct(l, 99).Round(100*time.Microsecond)))
	}
	s := fmt.Sprintf("%d reconciliation readers over %s: %d requests (%.0f/s); %s", n, r.wall.Round(time.Second), total,
		float64(total)/r.wall.Seconds(), strings.Join(parts, "; "))
	if len(r.waits) > 0 {
		w := slices.Clone(r.waits)
		slices.Sort(w)
		s += fmt.Sprintf("; Retry-After of the 503s p50 %s, p90 %s, max %s", pct(w, 50), pct(w, 90), w[len(w)-1])
	}
	return s
}
