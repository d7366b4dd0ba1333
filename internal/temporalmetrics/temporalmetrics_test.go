package temporalmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestHandlerExportsTaggedSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := New(reg).WithTags(map[string]string{"namespace": "default", "task_queue": "q1", "client_name": "dropped"})
	h.Counter("temporal_request").Inc(2)
	h.WithTags(map[string]string{"task_queue": "q2"}).Counter("temporal_request").Inc(1)
	h.Timer("temporal_activity_schedule_to_start_latency").Record(1500 * time.Millisecond)
	h.WithTags(map[string]string{"kind": "Cluster"}).Gauge("hyperfleet-odd.name").Update(3)

	want := `
# HELP temporal_request Temporal SDK metric temporal_request (see the SDK's metrics reference).
# TYPE temporal_request counter
temporal_request{activity_type="",kind="",namespace="default",operation="",poller_type="",task_queue="q1",worker_type="",workflow_type=""} 2
temporal_request{activity_type="",kind="",namespace="default",operation="",poller_type="",task_queue="q2",worker_type="",workflow_type=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "temporal_request"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "temporal_activity_schedule_to_start_latency_seconds"); n != 1 {
		t.Errorf("schedule-to-start histogram series = %d, want 1", n)
	}
	if n := testutil.CollectAndCount(reg, "hyperfleet_odd_name"); n != 1 {
		t.Errorf("a name with invalid characters was not made valid (%d series)", n)
	}
}

// A name another collector already took with another type gets a no-op
// instead of a panic in the worker.
func TestNameClashIsHarmless(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "temporal_taken", Help: "x"}))
	h := New(reg)
	h.Counter("temporal_taken").Inc(1)
	h.Timer("temporal_taken_seconds").Record(time.Second)
	h.Gauge("temporal_taken").Update(1)
	if n := testutil.CollectAndCount(reg, "temporal_taken"); n != 1 {
		t.Errorf("series of temporal_taken = %d, want the original 1", n)
	}
}
