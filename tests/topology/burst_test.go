//go:build integration

package topology_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/topology"
)

// queueBurst is the burst of creates this test sends at once: far more
// than this machine's production shape runs at once (unpaced, without
// admission control, it loses dispatches: docs/benchmarks.md, "Bursts on
// the production shape"), and small enough for make test.
const queueBurst = 600

// Contract: "admission control hands changes to Temporal only as fast as
// it keeps up; the rest wait in the outbox, say so in their Reconciled
// condition (AwaitingAdmission), and all complete, with no lost dispatch."
// The adapters run in a process of their own, as the Helm chart deploys
// them, so every adapter run is an activity dispatched through Temporal's
// matching service: the path a lost dispatch takes.
func TestBurstQueuesInsteadOfLosingDispatches(t *testing.T) {
	s := startShape(t, func(c *topology.Config) { c.AdapterWorkers = 1 })
	before := s.timeouts()

	var queuedSeen atomic.Bool
	stop := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			if s.anyAwaitingAdmission() {
				queuedSeen.Store(true)
				return
			}
		}
	}()
	start := time.Now()
	b := startBurst(t, s.tp.APIURLs(), queueBurst, 32, "queue")
	b.wait(t, 10*time.Minute)
	done := s.waitAllReconciled(15 * time.Minute)
	close(stop)
	<-watching
	t.Logf("%d clusters created at once, all Reconciled after %s", b.created.Load(), done.Sub(start).Round(time.Second))

	for replica, errs := range b.fivexx {
		t.Errorf("replica %s answered 5xx during the burst: %v", replica, errs)
	}
	after := s.timeouts()
	for kind, n := range after {
		d := n - before[kind]
		switch {
		case d == 0:
		case kind == "workflow task schedule_to_start_timeout":
			// A sticky workflow task that its worker did not take within
			// 5 s moves to the shared queue: a busy worker, not lost work.
			t.Logf("Temporal history counted %v %s during the burst", d, kind)
		default:
			t.Errorf("Temporal history counted %v %s during the burst, want none: a lost dispatch waits out its timeout", d, kind)
		}
	}
	if !queuedSeen.Load() {
		t.Error("no cluster ever said it waits for admission (reason AwaitingAdmission): the burst was not held back, so this test did not test admission control")
	}
}

// anyAwaitingAdmission reports whether a page of clusters shows one whose
// change waits for admission.
func (s *shape) anyAwaitingAdmission() bool {
	a := call(http.MethodGet, s.tp.BalancerURL()+apiPath+"/clusters?pageSize=100&search="+
		url.QueryEscape("status.conditions.Reconciled='False'"), "")
	if a.err != nil || a.code != http.StatusOK {
		return false
	}
	var list struct {
		Items []resource.Resource `json:"items"`
	}
	if json.Unmarshal(a.body, &list) != nil {
		return false
	}
	for _, c := range list.Items {
		if rec, _ := c.Condition(resource.ConditionReconciled); rec.Reason == "AwaitingAdmission" {
			return true
		}
	}
	return false
}

// timeouts reads Temporal history's own timeout counters: activity
// attempts and workflow tasks that timed out, by timeout type.
func (s *shape) timeouts() map[string]float64 {
	s.t.Helper()
	resp, err := http.Get(s.tp.TemporalMetricsURL("history")) //nolint:gosec // the shape's loopback metrics address
	if err != nil {
		s.t.Fatalf("read Temporal history's metrics: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("parse Temporal history's metrics: %v", err)
	}
	out := map[string]float64{}
	for _, name := range []string{"heartbeat_timeout", "schedule_to_start_timeout", "start_to_close_timeout", "schedule_to_close_timeout"} {
		for _, m := range families[name].GetMetric() {
			op := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" {
					op = l.GetValue()
				}
			}
			what := "activity"
			if strings.Contains(op, "WorkflowTask") {
				what = "workflow task"
			}
			out[fmt.Sprintf("%s %s", what, name)] += m.GetCounter().GetValue()
		}
	}
	return out
}
