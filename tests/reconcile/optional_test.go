//go:build integration

package reconcile

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Upstream's negative scenario, on the real system: adapters deployed
// besides the required ones fail, and the cluster still becomes Ready and
// is still deleted. Here they are declared optional: broken-optional runs
// and fails in its resources phase every round (its status says so), and
// absent-optional has no worker at all, so its run waits for one for
// minutes. Neither holds a round, Ready, or the deletion; both are told
// of the deletion, and their failures show in /statuses, the metrics and
// the workflow's state.
func TestFailingOptionalAdaptersNeverHoldAClusterBack(t *testing.T) {
	opts := defaultOptions()
	opts.registered = map[string][]string{resource.KindCluster: clusterAdapters, resource.KindNodePool: {}}
	opts.optional = map[string][]string{resource.KindCluster: {"broken-optional", "absent-optional"}}
	opts.adapters = []string{shipped("validation"), shipped("landing-zone"), filepath.Join("testdata", "broken-optional")}
	s := newSystem(t, opts)

	c := s.createCluster("e2e-optional", map[string]any{"platform": map[string]any{"type": "gcp"}})
	c = s.waitReady(c, 1, 60*time.Second)
	if conditionStatus(c, resource.ConditionAvailable) != resource.StatusTrue {
		t.Errorf("Available is not True: %s", conditionsOf(c))
	}
	for _, cond := range c.Status.Conditions {
		if strings.Contains(cond.Type, "Optional") {
			t.Errorf("an optional adapter has a condition of its own: %+v", cond)
		}
	}

	// The failing optional adapter's report is stored and listed.
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		st, ok := s.statuses(c)["broken-optional"]
		health := ""
		for _, cond := range st.Conditions {
			if cond.Type == resource.ConditionHealth {
				health = string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
			}
		}
		return ok && st.ObservedGeneration == 1 && strings.HasPrefix(health, "False/ExecutionFailed:resources: ") && strings.Contains(health, "is invalid"),
			fmt.Sprintf("broken-optional status %v, Health %s", ok, health)
	}, nil)

	// The workflow's state: Reconciled, waiting for the stability window,
	// the failure of one optional adapter and the other's run still
	// waiting for a worker.
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		v, err := s.view(resource.KindCluster, c.ID)
		ok := err == nil && v.Reconciled && v.Phase == reconcile.PhaseStable &&
			slices.Equal(v.Optional, []string{"absent-optional", "broken-optional"}) &&
			v.Adapters["broken-optional"].Outcome == reconcile.OutcomeFailed && slices.Contains(v.Running, "absent-optional")
		return ok, fmt.Sprintf("workflow view %+v, %v", v, err)
	}, nil)

	// Metrics name the optional adapter (not "unregistered") and count its
	// failed runs.
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		_, page := httpGet(s.url + "/metrics")
		return metricLine(string(page), "hyperfleet_api_status_reports_total", `adapter="broken-optional"`, `outcome="stored"`) &&
				metricLine(string(page), "hyperfleet_adapter_runs_total", `adapter_name="broken-optional"`, `outcome="failed"`),
			"metrics lack the optional adapter's reports or failed runs"
	}, nil)

	// Deletion waits for the required adapters only.
	s.mustDo(http.MethodDelete, path(c), nil, http.StatusAccepted)
	s.waitGone(c, 90*time.Second)
	s.waitClosed(resource.KindCluster, c.ID)
	// The deleting round told the optional adapter that has a worker
	// (absent-optional's first run was still waiting for one).
	var told bool
	for _, call := range activityCalls(t, s.history(resource.KindCluster, c.ID)) {
		if call.Adapter == "broken-optional" && call.Generation == 2 {
			told = true
		}
	}
	if !told {
		t.Errorf("broken-optional never ran at the deleting generation: %+v", activityCalls(t, s.history(resource.KindCluster, c.ID)))
	}
}

// metricLine reports whether an exposition page has a sample of the
// metric carrying every given label.
func metricLine(page, name string, labels ...string) bool {
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(line, l)
		}
		if all {
			return true
		}
	}
	return false
}
