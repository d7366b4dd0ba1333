//go:build integration

package reconcile

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/resource/kindsfile"
)

// chainKinds extends the shipped example kinds with a three-level chain.
const chainKinds = `
  - {kind: Region, plural: regions}
  - {kind: Zone, plural: zones, parent_kind: Region}
  - {kind: Rack, plural: racks, parent_kind: Zone}
`

// Configured kinds go through the same relay, workflow and adapters as
// clusters: a WifConfig of the example kinds file reaches Reconciled with
// an adapter of its own, and a Region > Zone > Rack chain deletes bottom-up.
func TestConfiguredKindsThroughTemporal(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kinds", "example-kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := kindsfile.Parse("kinds.yaml", append(example, chainKinds...))
	if err != nil {
		t.Fatal(err)
	}
	opts := defaultOptions()
	opts.kinds = tab.Kinds
	opts.adapters = []string{filepath.Join("testdata", "generic")}
	opts.registered = map[string][]string{
		resource.KindCluster: {}, resource.KindNodePool: {},
		"WifConfig": {"generic"}, "Region": {"generic"}, "Zone": {"generic"}, "Rack": {"generic"},
	}
	s := newSystem(t, opts)

	wif := s.mustDo(http.MethodPost, "/wifconfigs", map[string]any{"kind": "WifConfig", "name": "wif-e2e", "spec": map[string]any{"projectId": "p1"}}, http.StatusCreated)
	s.waitReady(wif, 1, 60*time.Second)
	if st := s.statuses(wif)["generic"]; st.ObservedGeneration != 1 {
		t.Fatalf("generic adapter status %+v, want a report at generation 1", st)
	}
	s.mustDo(http.MethodPatch, path(wif), map[string]any{"spec": map[string]any{"projectId": "p2"}}, http.StatusOK)
	wif = s.waitReady(wif, 2, 60*time.Second)
	if conditionStatus(wif, resource.ConditionReconciled) != resource.StatusTrue {
		t.Fatalf("wifconfig not Reconciled at generation 2: %s", conditionsOf(wif))
	}

	// A chain whose every level finalizes at once goes away whole.
	region := s.mustDo(http.MethodPost, "/regions", map[string]any{"kind": "Region", "name": "eu-west", "spec": map[string]any{}}, http.StatusCreated)
	zone := s.mustDo(http.MethodPost, path(region)+"/zones", map[string]any{"kind": "Zone", "name": "eu-west-1a", "spec": map[string]any{}}, http.StatusCreated)
	rack := s.mustDo(http.MethodPost, "/zones/"+zone.ID+"/racks", map[string]any{"kind": "Rack", "name": "rack-01", "spec": map[string]any{}}, http.StatusCreated)
	for _, r := range []resource.Resource{region, zone, rack} {
		s.waitReady(r, 1, 60*time.Second)
	}
	s.mustDo(http.MethodDelete, path(region), nil, http.StatusAccepted)
	for _, r := range []resource.Resource{rack, zone, region} {
		s.waitGone(r, 60*time.Second)
	}

	// Bottom-up: a held rack keeps its zone and region although their own
	// adapter has finalized them; once the rack goes, they follow.
	region = s.mustDo(http.MethodPost, "/regions", map[string]any{"kind": "Region", "name": "us-east", "spec": map[string]any{}}, http.StatusCreated)
	zone = s.mustDo(http.MethodPost, path(region)+"/zones", map[string]any{"kind": "Zone", "name": "us-east-1a", "spec": map[string]any{}}, http.StatusCreated)
	rack = s.mustDo(http.MethodPost, "/zones/"+zone.ID+"/racks", map[string]any{"kind": "Rack", "name": "rack-02", "spec": map[string]any{},
		"labels": map[string]string{"hold": "true"}}, http.StatusCreated)
	for _, r := range []resource.Resource{region, zone, rack} {
		s.waitReady(r, 1, 60*time.Second)
	}
	s.mustDo(http.MethodDelete, path(region), nil, http.StatusAccepted)
	for _, r := range []resource.Resource{region, zone, rack} {
		await.Eventually(t, 60*time.Second, "", func() (bool, string) {
			st, ok := s.statuses(r)["generic"]
			if !ok || st.ObservedGeneration != 2 {
				return false, "no report at the deleting generation yet"
			}
			return true, "Finalized " + string(adapterCondition(st, resource.ConditionFinalized))
		}, func() string { return s.describe(r) })
	}
	for _, r := range []resource.Resource{region, zone, rack} {
		got, ok := s.get(r)
		if !ok || got.DeletedTime == nil {
			t.Fatalf("%s %s should still be deleting while the rack is held (present %v)", r.Kind, r.Name, ok)
		}
	}
	for _, r := range []resource.Resource{region, zone} {
		if fin := adapterCondition(s.statuses(r)["generic"], resource.ConditionFinalized); fin != resource.StatusTrue {
			t.Fatalf("%s adapter Finalized %q, want True: it waits only for its children", r.Kind, fin)
		}
	}
	// The escape hatch releases the rack; the relay wakes each deleting
	// parent as its last child goes.
	s.mustDo(http.MethodPost, path(rack)+"/force-delete", map[string]any{"reason": "e2e: release the held rack"}, http.StatusNoContent)
	for _, r := range []resource.Resource{rack, zone, region} {
		s.waitGone(r, 60*time.Second)
	}
}

// adapterCondition is the status of one condition of an adapter's report.
func adapterCondition(st resource.AdapterStatus, typ string) resource.ConditionStatus {
	return st.ConditionStatus(typ)
}
