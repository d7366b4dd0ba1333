package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

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
