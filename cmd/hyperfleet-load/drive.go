package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

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
