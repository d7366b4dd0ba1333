//go:build integration

package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

// TestTenancyAdoption: resources stored before tenancy was turned on are
// given a tenancy by a system caller (PUT .../tenancy), a cluster with its
// node pools; their tenant then reads, changes and deletes them, another
// tenant still gets 404. Tenants may not adopt; a resource with another
// tenancy, a name the tenancy uses and an invalid tenancy are refused and
// change nothing; adopting again changes nothing (issue 43, item 6).
func TestTenancyAdoption(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		before := newEnv(t, b)
		c := before.createCluster("legacy")
		np := before.createNodePool(c.ID, "pool")
		clash := before.createCluster("taken")
		// Without a tenancy file there is no tenancy to assign.
		before.do("PUT", c.Href+"/tenancy", map[string]string{"org": "acme"}).problem(400, "HYPERFLEET-VAL-001")

		e := before.restart(withTenancy(t, gatewayTenancy, false))
		ctx := context.Background()
		own := e.as(acme, "POST", base+"/clusters", clusterBody("taken")).expect(201).resource()
		snapshot := fleetSnapshot(t, e)
		acmeOrg := map[string]string{"org": "acme"}

		// Tenants are refused before anything is read: the same answer
		// for a resource of no tenancy, their own and a random id.
		for _, who := range []caller{acme, globex, acmeWeb} {
			for _, path := range []string{c.Href, own.Href, base + "/clusters/" + uuid.NewString()} {
				p := e.as(who, "PUT", path+"/tenancy", acmeOrg).problem(403, "HYPERFLEET-AUZ-001")
				if !strings.Contains(p.Detail, "only system callers may assign a tenancy") {
					t.Errorf("a tenant's adoption: %s", p.Detail)
				}
			}
		}
		e.as(nobody, "PUT", c.Href+"/tenancy", acmeOrg).problem(403, "HYPERFLEET-AUZ-002")
		// The tenancy is checked as the tenancy file checks a tenant's.
		for _, tc := range []struct {
			body  any
			code  string
			field string
		}{
			{map[string]string{}, "HYPERFLEET-VAL-001", "org"},
			{map[string]string{"project": "web"}, "HYPERFLEET-VAL-001", "org"},
			{map[string]string{"org": "acme", "team": "x"}, "HYPERFLEET-VAL-001", "team"},
			{map[string]string{"org": "ac me"}, "HYPERFLEET-VAL-001", "org"},
			{map[string]string{"org": strings.Repeat("a", 64)}, "HYPERFLEET-VAL-001", "org"},
			{map[string]string{"org": "acme", "project": ""}, "HYPERFLEET-VAL-001", "project"},
			{`{"org": 5}`, "HYPERFLEET-VAL-002", ""},
			{`{"org": null}`, "HYPERFLEET-VAL-002", "org"},
			{`{"org": "acme", "org": "globex"}`, "HYPERFLEET-VAL-002", "org"},
			{`["org"]`, "HYPERFLEET-VAL-002", ""},
		} {
			p := e.as(system, "PUT", c.Href+"/tenancy", tc.body).problem(400, tc.code)
			if tc.field != "" && !p.names(tc.field) {
				t.Errorf("%v: the problem names %v, want %s (%s)", tc.body, p.fields(), tc.field, p.Detail)
			}
		}
		// Child kinds have no route of their own: a child has its parent's.
		e.as(system, "PUT", np.Href+"/tenancy", acmeOrg).problem(404, "HYPERFLEET-NTF-002")
		e.as(system, "PUT", base+"/clusters/"+uuid.NewString()+"/tenancy", acmeOrg).problem(404, "HYPERFLEET-NTF-001")
		// Another tenancy is not moved; a name the tenancy uses is a
		// conflict naming the name.
		p := e.as(system, "PUT", own.Href+"/tenancy", map[string]string{"org": "globex"}).problem(409, "HYPERFLEET-CNF-006")
		if !strings.Contains(p.Detail, "already has the tenancy org=acme") || !p.names("tenancy") {
			t.Errorf("another tenancy: %s %v", p.Detail, p.fields())
		}
		p = e.as(system, "PUT", clash.Href+"/tenancy", acmeOrg).problem(409, "HYPERFLEET-CNF-001")
		if !strings.Contains(p.Detail, `"taken"`) || !p.names("name") {
			t.Errorf("a name the tenancy uses: %s %v", p.Detail, p.fields())
		}
		if after := fleetSnapshot(t, e); after != snapshot {
			t.Fatalf("refused adoptions changed the fleet\nbefore: %s\nafter:  %s", snapshot, after)
		}
		for _, r := range []string{c.Href, np.Href, clash.Href} {
			e.as(acme, "GET", r, nil).problem(404, "HYPERFLEET-NTF-001")
		}

		// The system caller adopts the cluster; its node pool follows.
		old := e.as(system, "GET", c.Href, nil).expect(200).resource()
		got := e.as(system, "PUT", c.Href+"/tenancy", acmeOrg).expect(200).resource()
		if fmt.Sprint(got.Tenancy) != "map[org:acme]" || got.Generation != old.Generation || !got.UpdatedTime.After(old.UpdatedTime) ||
			got.UpdatedBy != "system@hyperfleet.local" || string(got.Spec) != string(old.Spec) {
			t.Errorf("the adopted cluster: %+v (before: %+v)", got, old)
		}
		for _, r := range []string{c.Href, np.Href} {
			for _, who := range []caller{acme, system} {
				if got := e.as(who, "GET", r, nil).expect(200).resource(); fmt.Sprint(got.Tenancy) != "map[org:acme]" || got.UpdatedBy != "system@hyperfleet.local" {
					t.Errorf("%s read by the %s: tenancy %v, updated by %s", r, who.name, got.Tenancy, got.UpdatedBy)
				}
			}
			e.as(globex, "GET", r, nil).problem(404, "HYPERFLEET-NTF-001")
			e.as(acmeWeb, "GET", r, nil).problem(404, "HYPERFLEET-NTF-001")
		}
		// The tenant's lists and totals count them at once, searched or not.
		if ids, total := listed(e.as(acme, "GET", base+"/clusters", nil)); total != 2 || !slices.Contains(ids, c.ID) {
			t.Errorf("acme's clusters: %v (total %d)", ids, total)
		}
		if ids, total := listed(e.as(acme, "GET", base+"/clusters?search="+urlQuery("labels.environment='production'"), nil)); total != 2 || !slices.Contains(ids, c.ID) {
			t.Errorf("acme's clusters searched: %v (total %d)", ids, total)
		}
		if ids, total := listed(e.as(acme, "GET", base+"/nodepools", nil)); total != 1 || ids[0] != np.ID {
			t.Errorf("acme's node pools: %v (total %d)", ids, total)
		}
		if ids, _ := listed(e.as(globex, "GET", base+"/resources", nil)); len(ids) != 0 {
			t.Errorf("globex lists %v", ids)
		}
		// The change log carries both, in the new tenancy.
		changes, err := e.app.Store.ReadChanges(ctx, store.ChangeQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		adopted := map[string]bool{}
		for _, ch := range changes {
			if ch.Type == store.ChangeModified && ch.Tenant == "org=acme" {
				adopted[ch.Resource.ID] = true
			}
		}
		if !adopted[c.ID] || !adopted[np.ID] {
			t.Errorf("the change log has no MODIFIED in org=acme for the cluster and its node pool: %v", adopted)
		}

		// Adopting again changes nothing, the clash still goes elsewhere.
		patched := e.as(acme, "PATCH", c.Href, map[string]any{"labels": map[string]string{"adopted": "yes"}}).expect(200).resource()
		again := e.as(system, "PUT", c.Href+"/tenancy", acmeOrg).expect(200).resource()
		if !again.UpdatedTime.Equal(patched.UpdatedTime) || again.UpdatedBy != patched.UpdatedBy || again.Generation != patched.Generation {
			t.Errorf("a repeated adoption changed the cluster: %+v, was %+v", again, patched)
		}
		e.as(system, "PUT", c.Href+"/tenancy", map[string]string{"org": "acme", "project": "web"}).problem(409, "HYPERFLEET-CNF-006")
		if got := e.as(system, "PUT", clash.Href+"/tenancy", map[string]string{"org": "globex"}).expect(200).resource(); fmt.Sprint(got.Tenancy) != "map[org:globex]" {
			t.Errorf("the clash adopted by globex: %v", got.Tenancy)
		}
		e.as(globex, "GET", clash.Href, nil).expect(200)

		// The tenant changes and deletes what it was given.
		e.as(acme, "PATCH", np.Href, map[string]any{"spec": map[string]any{"replicas": 5}}).expect(200)
		e.as(globex, "DELETE", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.as(system, "DELETE", c.Href, nil).problem(403, "HYPERFLEET-AUZ-001")
		e.as(acme, "DELETE", c.Href, nil).expect(202)
		e.as(acme, "POST", c.Href+"/force-delete", map[string]string{"reason": "adopted, then cleaned up"}).expect(204)
		e.as(system, "GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.as(system, "GET", np.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		if _, total := listed(e.as(acme, "GET", base+"/clusters", nil)); total != 1 {
			t.Errorf("acme's clusters after the deletion: total %d", total)
		}
	})
}
