//go:build integration

package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/resource"
)

func withOptional(cluster ...string) option {
	return func(o *apiserver.Options) {
		o.Optional = map[string][]string{resource.KindCluster: cluster}
	}
}

// An optional adapter's reports are stored, listed and counted under its
// name, but never decide a condition: not Ready, not Available, not a
// condition of its own, not removal. Past the per-resource limit of
// adapter names it is let in like a required one.
func TestOptionalAdapterReports(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("optional-reports")
		e.report(c, report("audit", 1, "False")).expect(201)
		for _, a := range []string{"validation", "landing-zone"} {
			e.report(c, report(a, 1, "True")).expect(201)
		}
		got := e.expectCond(c.ID, "Ready", "True/ResourceReady/1")
		if cond(got, "Available") != "True/ResourceAvailable/1" || cond(got, "AuditSuccessful") != "missing" {
			t.Errorf("conditions: Available %s, AuditSuccessful %s", cond(got, "Available"), cond(got, "AuditSuccessful"))
		}
		var list resource.List[resource.AdapterStatus]
		e.do("GET", statusPath(c), nil).expect(200).into(&list)
		found := false
		for _, st := range list.Items {
			found = found || st.Adapter == "audit" && st.ConditionStatus("Available") == "False"
		}
		if !found || list.Total != 3 {
			t.Errorf("statuses %+v, want audit's report listed", list)
		}
		metrics := string(e.do("GET", "/metrics", nil).expect(200).body)
		if !strings.Contains(metrics, `adapter="audit",kind="Cluster",outcome="stored"`) {
			t.Errorf("metrics do not count audit under its name")
		}

		// Deletion: the required adapters' Finalized removes the cluster,
		// whatever the optional one says.
		e.do("DELETE", c.Href, nil).expect(202)
		e.report(c, report("audit", 2, "False", "Finalized", "False")).expect(201)
		for _, a := range []string{"validation", "landing-zone"} {
			e.report(c, report(a, 2, "True", "Finalized", "True")).expect(201)
		}
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")

		// The limit on adapter names does not apply to an optional adapter.
		c = e.createCluster("optional-limit")
		for i := range lifecycle.MaxAdaptersPerResource {
			e.report(c, report(fmt.Sprintf("stray-%d", i), 1, "True")).expect(201)
		}
		e.report(c, report("one-too-many", 1, "True")).problem(400, "HYPERFLEET-VAL-001")
		e.report(c, report("audit", 1, "True")).expect(201)
	}, withOptional("audit"))
}
