// Package metrics holds the adapter engine's Prometheus metrics: runs and
// phases by adapter and outcome, resource operations, and API calls by
// method, endpoint template and status code (upstream's
// hyperfleet_adapter_api_requests_total labels).
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are shared by every adapter of a process; a nil *Metrics records
// nothing, so tests and dry-run need no registry.
type Metrics struct {
	runs         *prometheus.CounterVec
	phases       *prometheus.HistogramVec
	resources    *prometheus.CounterVec
	apiRequests  *prometheus.CounterVec
	apiDurations *prometheus.HistogramVec
	watched      *watchedCollector
}

// New registers the metrics on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_adapter_runs_total",
			Help: "Adapter runs, by adapter and outcome (success, failed, skipped).",
		}, []string{"adapter_name", "outcome"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hyperfleet_adapter_phase_duration_seconds",
			Help:    "Duration of adapter phases (params, preconditions, resources, post), by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"adapter_name", "phase", "outcome"}),
		resources: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_adapter_resource_operations_total",
			Help: "Resource operations (create, update, skip, recreate, delete), by transport and outcome.",
		}, []string{"adapter_name", "transport", "operation", "outcome"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_adapter_api_requests_total",
			Help: "HTTP calls made by adapters, by API, method, endpoint template and status code.",
		}, []string{"adapter_name", "api", "method", "endpoint", "status_code"}),
		apiDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hyperfleet_adapter_api_request_duration_seconds",
			Help:    "Latency of adapter HTTP calls, by API, method and endpoint template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"adapter_name", "api", "method", "endpoint"}),
		watched: &watchedCollector{unwatched: map[string]func() string{}},
	}
	if reg != nil {
		m.Register(reg)
	}
	return m
}

// Register adds the metrics to reg, for metrics made with New(nil) before
// the registry existed.
func (m *Metrics) Register(reg prometheus.Registerer) {
	reg.MustRegister(m.runs, m.phases, m.resources, m.apiRequests, m.apiDurations, m.watched)
}

// Watched exports, per adapter, whether every object it applies is watched
// now (hyperfleet_adapter_objects_watched): unwatched says why not, ""
// when it is. A 0 means the adapter's resources fell back to the short
// safety-net window: drift is repaired only at their rounds.
func (m *Metrics) Watched(adapter string, unwatched func() string) {
	if m != nil {
		m.watched.add(adapter, unwatched)
	}
}

// Run counts a finished run.
func (m *Metrics) Run(adapter string, outcome RunOutcome) {
	if m != nil {
		m.runs.WithLabelValues(adapter, string(outcome)).Inc()
	}
}

// RunOutcome is how an adapter run ended, the outcome label of
// hyperfleet_adapter_runs_total.
type RunOutcome string

// Run outcomes.
const (
	RunSuccess RunOutcome = "success"
	RunFailed  RunOutcome = "failed"
	RunSkipped RunOutcome = "skipped"
)

// Phase records a phase's duration.
func (m *Metrics) Phase(adapter, phase, outcome string, d time.Duration) {
	if m != nil {
		m.phases.WithLabelValues(adapter, phase, outcome).Observe(d.Seconds())
	}
}

// Resource counts a resource operation.
func (m *Metrics) Resource(adapter, transport, operation, outcome string) {
	if m != nil {
		m.resources.WithLabelValues(adapter, transport, operation, outcome).Inc()
	}
}

// APIRequest records one HTTP call; code 0 means no response.
func (m *Metrics) APIRequest(adapter, api, method, endpoint string, code int, d time.Duration) {
	if m == nil {
		return
	}
	status := "error"
	if code > 0 {
		status = strconv.Itoa(code)
	}
	m.apiRequests.WithLabelValues(adapter, api, method, endpoint, status).Inc()
	m.apiDurations.WithLabelValues(adapter, api, method, endpoint).Observe(d.Seconds())
}
