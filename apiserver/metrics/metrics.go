// Package metrics exposes the API's Prometheus metrics: requests by route
// and code, their latency, the database pool, and domain counters.
package metrics

import (
	"database/sql"
	"net/http"
	"strconv"
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
	}
	m.Registry.MustRegister(m.requests, m.latency, m.reports,
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
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
