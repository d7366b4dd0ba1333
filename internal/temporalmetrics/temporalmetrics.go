// Package temporalmetrics exports the Temporal SDK's metrics (and the
// metrics workflows record through workflow.GetMetricsHandler) to a
// Prometheus registry: schedule-to-start latency per task queue, activity
// and workflow task latencies, poll results, and the reconcile workflow's
// own rounds and backoffs.
package temporalmetrics

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// Labels are the tags kept as Prometheus labels. Prometheus needs one label
// set per metric name, while the SDK varies its tags from metric to metric,
// so every series gets all of these (empty when the SDK did not set it) and
// any other tag is dropped.
var Labels = []string{"namespace", "task_queue", "workflow_type", "activity_type", "worker_type", "poller_type", "operation", "kind"}

// Buckets of the latency histograms, in seconds.
var Buckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// New returns a client.MetricsHandler that registers each metric with reg
// on first use.
func New(reg prometheus.Registerer) client.MetricsHandler {
	return &handler{set: &set{reg: reg, vecs: map[string]prometheus.Collector{}}, tags: map[string]string{}}
}

type set struct {
	reg  prometheus.Registerer
	mu   sync.Mutex
	vecs map[string]prometheus.Collector
}

type handler struct {
	set  *set
	tags map[string]string
}

func (h *handler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &handler{set: h.set, tags: merged}
}

func (h *handler) values() []string {
	out := make([]string, len(Labels))
	for i, l := range Labels {
		out[i] = h.tags[l]
	}
	return out
}

// vec returns the collector registered under name, making it with mk the
// first time. A name already registered by someone else with another type
// gets a no-op, so a clash never panics a worker.
func (s *set) vec(name string, mk func() prometheus.Collector) prometheus.Collector {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.vecs[name]; ok {
		return v
	}
	v := mk()
	if err := s.reg.Register(v); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			v = are.ExistingCollector
		} else {
			v = nil
		}
	}
	s.vecs[name] = v
	return v
}

func (h *handler) Counter(name string) client.MetricsCounter {
	name = promName(name)
	v, ok := h.set.vec(name, func() prometheus.Collector {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help(name)}, Labels)
	}).(*prometheus.CounterVec)
	if !ok {
		return client.MetricsNopHandler.Counter(name)
	}
	c := v.WithLabelValues(h.values()...)
	return counter{c}
}

func (h *handler) Gauge(name string) client.MetricsGauge {
	name = promName(name)
	v, ok := h.set.vec(name, func() prometheus.Collector {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help(name)}, Labels)
	}).(*prometheus.GaugeVec)
	if !ok {
		return client.MetricsNopHandler.Gauge(name)
	}
	return gauge{v.WithLabelValues(h.values()...)}
}

func (h *handler) Timer(name string) client.MetricsTimer {
	name = promName(name)
	if !strings.HasSuffix(name, "_seconds") {
		name += "_seconds"
	}
	v, ok := h.set.vec(name, func() prometheus.Collector {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help(name), Buckets: Buckets}, Labels)
	}).(*prometheus.HistogramVec)
	if !ok {
		return client.MetricsNopHandler.Timer(name)
	}
	return timer{v.WithLabelValues(h.values()...)}
}

type counter struct{ c prometheus.Counter }

func (c counter) Inc(d int64) {
	if d > 0 {
		c.c.Add(float64(d))
	}
}

type gauge struct{ g prometheus.Gauge }

func (g gauge) Update(v float64) { g.g.Set(v) }

type timer struct{ h prometheus.Observer }

func (t timer) Record(d time.Duration) { t.h.Observe(d.Seconds()) }

// promName keeps the SDK's names (temporal_...) and makes anything else a
// valid Prometheus name.
func promName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == ':' {
			return r
		}
		return '_'
	}, name)
}

func help(name string) string {
	if strings.HasPrefix(name, "temporal_") {
		return "Temporal SDK metric " + name + " (see the SDK's metrics reference)."
	}
	return "Recorded by the reconcile workflow: " + name + "."
}
