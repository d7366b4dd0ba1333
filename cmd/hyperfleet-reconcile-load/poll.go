package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/resource"
)

// sentinel is the polling baseline: every interval it lists the clusters and
// runs every adapter for each one not Reconciled, as upstream's Sentinel
// publishing to a broker that the adapters consume would, minus the broker.
func sentinel(ctx context.Context, base string, engines []*executor.Engine, interval time.Duration) {
	api := &apiClient{base: base + resource.BasePath, http: &http.Client{Timeout: 30 * time.Second}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		all, err := api.clusters(ctx)
		if err != nil {
			continue
		}
		sem := make(chan struct{}, 16*len(engines))
		var wg sync.WaitGroup
		for i := range all {
			if isReady(&all[i]) {
				continue
			}
			ev := map[string]any{"id": all[i].ID, "kind": all[i].Kind, "href": all[i].Href, "generation": all[i].Generation}
			for _, eng := range engines {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					_, _ = eng.Run(ctx, ev)
				}()
			}
		}
		wg.Wait()
	}
}
