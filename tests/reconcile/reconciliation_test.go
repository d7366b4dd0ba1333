//go:build integration

package reconcile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation"
	"github.com/hyperfleet/hyperfleet/internal/await"
)

// Contract: GET <resource>/reconciliation says where a resource's
// reconcile stands (its round and its cause, the next round and why, each
// adapter's last run and whether one runs), read from its workflow, so a
// REST client needs no Temporal access to know why it is not Ready.
func TestReconciliationEndpoint(t *testing.T) {
	s := newSystem(t, defaultOptions())
	c := s.createCluster("e2e-why", nil)
	s.waitReady(c, 1, 60*time.Second)
	var rep reconciliation.Report
	await.Eventually(t, 30*time.Second, "the reconciliation of a Reconciled cluster", func() (bool, string) {
		code, out := s.do(http.MethodGet, path(c)+"/reconciliation", nil)
		if code != http.StatusOK {
			return false, fmt.Sprintf("HTTP %d %s", code, out)
		}
		rep = reconciliation.Report{}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatal(err)
		}
		return rep.State == reconciliation.StateReconciled, string(out)
	})
	if rep.ID != c.ID || rep.Generation != 1 || rep.ReconcilingGeneration != 1 || rep.Round == nil || rep.Round.Number < 1 || rep.NextRound == nil {
		t.Errorf("report %+v round %+v next %+v", rep, rep.Round, rep.NextRound)
	}
	names := ""
	for _, a := range rep.Adapters {
		names += a.Name + " "
		if !a.Required || a.Running || a.LastRun == nil || a.LastRun.Outcome != "success" || a.LastRun.Generation != 1 || a.LastRun.DurationMS == nil {
			t.Errorf("adapter %s: %+v last run %+v", a.Name, a, a.LastRun)
		}
	}
	if names != "landing-zone validation " {
		t.Errorf("adapters %q, want the cluster adapters registered here (%v)", names, clusterAdapters)
	}
	// Without a tenancy file every caller may see the workflow's name.
	if rep.Workflow == nil || rep.Workflow.ID != "hyperfleet-cluster-"+c.ID {
		t.Errorf("workflow %+v", rep.Workflow)
	}
	// An unknown resource is a 404, as for every read.
	code, out := s.do(http.MethodGet, "/clusters/no-such-cluster/reconciliation", nil)
	if code != http.StatusNotFound || !strings.Contains(string(out), "HYPERFLEET-NTF-001") {
		t.Errorf("reconciliation of no cluster = %d %s", code, out)
	}
}
