package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// watchedDesc is 1 while every object an adapter applies is watched, 0
// while one is not (no watch, or a watch that stopped working).
var watchedDesc = prometheus.NewDesc("hyperfleet_adapter_objects_watched",
	"1 while every object the adapter applies is watched by this worker, 0 while one is not: its resources then fall back to the short safety-net window (--stability-window) and drift is repaired only at their rounds.",
	[]string{"adapter_name"}, nil)

// watchedCollector asks each adapter at scrape time, so a watch that stops
// shows at once, not at the adapter's next run (hours away on an idle
// fleet).
type watchedCollector struct {
	mu        sync.Mutex
	unwatched map[string]func() string
}

func (c *watchedCollector) add(adapter string, unwatched func() string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unwatched[adapter] = unwatched
}

func (c *watchedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- watchedDesc }

func (c *watchedCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for adapter, unwatched := range c.unwatched {
		v := 1.0
		if unwatched() != "" {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(watchedDesc, prometheus.GaugeValue, v, adapter)
	}
}
