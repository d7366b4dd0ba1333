package relay

import "github.com/prometheus/client_golang/prometheus"

type relayMetrics struct {
	delivered *prometheus.CounterVec
	handoff   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) relayMetrics {
	m := relayMetrics{
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_relay_deliveries_total",
			Help: "Reconcile requests handed from the outbox to Temporal, by outcome (ok, error).",
		}, []string{"outcome"}),
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hyperfleet_relay_handoff_seconds",
			Help:    "Time from an outbox row's commit to Temporal accepting it.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 120, 600},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.delivered, m.handoff)
	}
	return m
}
