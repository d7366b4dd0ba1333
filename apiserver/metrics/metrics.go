// Package metrics exposes the API's Prometheus metrics: requests by route
// and code, their latency, the database pool, and domain counters.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics owns a registry of its own, so several servers can live in one
// process (tests) without clashing on the global one.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	reports  *prometheus.CounterVec
	compacts *prometheus.CounterVec
}

// New registers the API's metrics; db may be nil.
func New(db *sql.DB) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_api_requests_total",
			Help: "HTTP requests served, by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hyperfleet_api_request_duration_seconds",
			Help:    "HTTP request latency, by method, route template and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "code"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_api_status_reports_total",
			Help: "Adapter status reports, by kind, adapter and outcome (stored, discarded, rejected).",
		}, []string{"kind", "adapter", "outcome"}),
		compacts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_api_term_compactions_total",
			Help: "Compactions of appended term-count changes (PostgreSQL), by outcome (folded: some terms moved, idle: nothing to fold or another replica at it, failed).",
		}, []string{"outcome"}),
	}
	m.Registry.MustRegister(m.requests, m.latency, m.reports, m.compacts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if db != nil {
		m.Registry.MustRegister(collectors.NewDBStatsCollector(db, "hyperfleet"))
	}
	return m
}

// Middleware records every request under its route template, never the raw
// path, so ids do not explode the label space.
func (m *Metrics) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		code := strconv.Itoa(c.Writer.Status())
		m.requests.WithLabelValues(c.Request.Method, route, code).Inc()
		m.latency.WithLabelValues(c.Request.Method, route, code).Observe(time.Since(start).Seconds())
	}
}

// StatusReport counts one adapter report by outcome.
func (m *Metrics) StatusReport(kind, adapter, outcome string) {
	m.reports.WithLabelValues(kind, adapter, outcome).Inc()
}

// Handler serves /metrics.
// TermCompaction counts one compaction of term-count changes: failed
// when err is set, folded when it moved terms, idle otherwise.
func (m *Metrics) TermCompaction(moved int64, err error) {
	outcome := "idle"
	switch {
	case err != nil:
		outcome = "failed"
	case moved > 0:
		outcome = "folded"
	}
	m.compacts.WithLabelValues(outcome).Inc()
}

func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Fleet is the state of the fleet the API reports on each scrape.
type Fleet struct {
	// OutboxPending counts changes committed but not yet handed to Temporal.
	OutboxPending int64
	// OutboxOldest is the commit time of the oldest of them (zero: none).
	OutboxOldest time.Time
	// NotReconciled counts, per kind, the resources whose Ready condition
	// is not True (deleting ones included).
	NotReconciled map[string]int64
}

// fleetCacheFor is how long one reading serves scrapes: several Prometheus
// replicas scraping every few seconds must not each cost a count query.
const fleetCacheFor = 10 * time.Second

// WatchFleet exports the fleet gauges, reading them with read at most once
// per fleetCacheFor. A failed read exports nothing (and counts the error)
// rather than stale values.
func (m *Metrics) WatchFleet(read func(context.Context) (Fleet, error)) {
	m.Registry.MustRegister(&fleetCollector{read: read,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "hyperfleet_fleet_read_errors_total",
			Help: "Failed reads of the fleet gauges (outbox and not-Reconciled counts)."})})
}

var (
	outboxPendingDesc = prometheus.NewDesc("hyperfleet_outbox_pending",
		"Changes committed but not yet handed to Temporal (outbox rows).", nil, nil)
	outboxOldestDesc = prometheus.NewDesc("hyperfleet_outbox_oldest_seconds",
		"Age of the oldest change not yet handed to Temporal: the relay's lag (0 when the outbox is empty).", nil, nil)
	notReconciledDesc = prometheus.NewDesc("hyperfleet_resources_not_reconciled",
		"Resources whose Ready condition is not True, by kind.", []string{"kind"}, nil)
)

type fleetCollector struct {
	read   func(context.Context) (Fleet, error)
	errors prometheus.Counter

	mu   sync.Mutex
	at   time.Time
	last Fleet
	ok   bool
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxPendingDesc
	ch <- outboxOldestDesc
	ch <- notReconciledDesc
	c.errors.Describe(ch)
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if time.Since(c.at) > fleetCacheFor || !c.ok {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		f, err := c.read(ctx)
		cancel()
		c.at, c.last, c.ok = time.Now(), f, err == nil
		if err != nil {
			c.errors.Inc()
		}
	}
	f, ok := c.last, c.ok
	c.mu.Unlock()
	c.errors.Collect(ch)
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(outboxPendingDesc, prometheus.GaugeValue, float64(f.OutboxPending))
	age := 0.0
	if !f.OutboxOldest.IsZero() {
		age = max(time.Since(f.OutboxOldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(outboxOldestDesc, prometheus.GaugeValue, age)
	for kind, n := range f.NotReconciled {
		ch <- prometheus.MustNewConstMetric(notReconciledDesc, prometheus.GaugeValue, float64(n), kind)
	}
}
