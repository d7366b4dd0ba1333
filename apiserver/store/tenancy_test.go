//go:build integration

package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// tenants of the fixtures: canonical forms and their maps.
var fixtureTenants = []map[string]string{{"org": "t0"}, {"org": "t1"}, {"org": "t2", "project": "web"}}

// tenancyFixture stores n clusters spread over three tenancies (and a few
// of no tenancy, as stored before tenancy was on), with varied labels
// and statuses, and a node pool under some.
func tenancyFixture(t *testing.T, s store.Store, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		c := cluster(fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("c-%04d", i/3)) // each name in all three tenancies
		c.Tenancy = fixtureTenants[i%3]
		if i%10 == 9 {
			c.Tenancy = nil
			c.Name = fmt.Sprintf("untenanted-%d", i)
		}
		c.Labels = map[string]string{"shard": fmt.Sprint(i % 4)}
		c.Status.Conditions[0].Status = []resource.ConditionStatus{resource.StatusTrue, resource.StatusFalse}[i%2]
		c.CreatedTime = now.Add(time.Duration(i%7) * time.Second) // ties broken by id
		create(t, s, c)
		if i%5 == 0 {
			np := nodePool(fmt.Sprintf("00000000-0000-4000-9000-%012d", i), c.ID, "pool")
			np.Tenancy = c.Tenancy
			create(t, s, np)
		}
	}
}

// pgTenancyBulk adds 20,000 analysed clusters over 100 tenancies, so
// PostgreSQL's planner has the choice a large fleet gives it.
func pgTenancyBulk(t *testing.T, s store.Store) {
	t.Helper()
	_, err := s.SQLDB().ExecContext(context.Background(), `INSERT INTO resources
		(id, kind, name, generation, spec, labels, conditions, created_time, updated_time, created_by, updated_by, condition_terms, tenant)
		SELECT 'bulk-' || g, 'Cluster', 'bulk-' || g, 1, '{}', jsonb_build_object('shard', 's' || (g % 100)),
			jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'False')),
			now(), now(), 'bulk', 'bulk', '["c:Ready=False"]', 'org=b' || (g % 100)
		FROM generate_series(1, 20000) AS g`)
	if err == nil {
		_, err = s.SQLDB().ExecContext(context.Background(), `ANALYZE resources, resource_terms`)
	}
	if err != nil {
		t.Fatalf("bulk fixture: %v", err)
	}
}

// walkTenant reads every page of a tenant's list (the search indexed or
// not), following continuation tokens; ids in order and the total.
func walkTenant(t *testing.T, s store.Store, kind, tenant, query string, indexed bool, order []search.OrderTerm, size int) ([]string, int64) {
	t.Helper()
	w, err := search.Translate(query, s.Dialect(), search.Options{Table: "resources", Indexed: indexed, Kind: kind == "", OwnerReferences: true})
	if err != nil {
		t.Fatalf("translate %q: %v", query, err)
	}
	q := store.ListQuery{Kind: kind, Where: w, Order: order, Limit: size, Tenant: tenant}
	var ids []string
	total := int64(-1)
	for pages := 0; ; pages++ {
		if pages > 500 {
			t.Fatalf("%s: more than 500 pages", query)
		}
		page, err := s.ListResources(context.Background(), q)
		if err != nil {
			t.Fatalf("list %q as %q: %v", query, tenant, err)
		}
		if total >= 0 && page.Total != total {
			t.Errorf("%q as %q: total %d, then %d", query, tenant, total, page.Total)
		}
		total = page.Total
		for _, r := range page.Items {
			if tenant != "" && resource.TenancyKey(r.Tenancy) != tenant {
				t.Errorf("%q as %q: %s of tenancy %v", query, tenant, r.ID, r.Tenancy)
			}
			ids = append(ids, r.ID)
		}
		if page.Next == nil {
			return ids, total
		}
		q.After = page.Next
	}
}

// TestTenantListsMatchExact: a tenant's list, whichever way it is read
// (the term index, the tenancy's indexes, the SQL form of its search),
// holds exactly the resources of its tenancy that the unscoped list
// holds, with an exact total, before and after creates, updates and
// removals.
func TestTenantListsMatchExact(t *testing.T) {
	queries := []string{"", "labels.shard = '1'", "labels.shard = '1' and status.conditions.Ready = 'True'",
		"status.conditions.Ready = 'False'", "labels.shard != '1'", "name like 'c-%'", "labels.shard = 'none'"}
	orders := [][]search.OrderTerm{nil, {{Column: "created_time"}}, {{Column: "name"}}, {{Column: "name", Desc: true}}, {{Column: "updated_time"}}}
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		tenancyFixture(t, s, 60)
		check := func(step string) {
			t.Helper()
			for _, kind := range []string{resource.KindCluster, resource.KindNodePool, ""} {
				for _, q := range queries {
					all, _ := walkTenant(t, s, kind, "", q, false, nil, 1000)
					byID := map[string]string{}
					page, err := s.ListResources(ctx, store.ListQuery{Kind: kind, Limit: 1000})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range page.Items {
						byID[r.ID] = resource.TenancyKey(r.Tenancy)
					}
					for _, tn := range fixtureTenants {
						key := resource.TenancyKey(tn)
						var want []string
						for _, id := range all {
							if byID[id] == key {
								want = append(want, id)
							}
						}
						for _, order := range orders {
							for _, indexed := range []bool{false, true} {
								got, total := walkTenant(t, s, kind, key, q, indexed, order, 3)
								if order == nil && !slices.Equal(got, want) || !sameSet(got, want) || total != int64(len(want)) {
									t.Errorf("%s: %q kind %q as %s (order %v, indexed %t): %v (total %d), want %v",
										step, q, kind, key, order, indexed, got, total, want)
								}
							}
						}
					}
				}
			}
		}
		check("as stored")
		err := s.InTx(ctx, func(tx store.Tx) error {
			for _, i := range []int{1, 4, 7} {
				r, err := tx.LockResource(ctx, resource.KindCluster, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
				if err != nil {
					return err
				}
				r.Labels["shard"] = "1"
				r.Status.Conditions[0].Status = "True"
				if err := tx.UpdateResource(ctx, r); err != nil {
					return err
				}
			}
			return tx.RemoveResource(ctx, "00000000-0000-4000-8000-000000000010")
		})
		if err != nil {
			t.Fatal(err)
		}
		extra := cluster("00000000-0000-4000-8000-000000000900", "late")
		extra.Tenancy = fixtureTenants[1]
		create(t, s, extra)
		if _, err := s.CompactTermCounts(ctx); err != nil {
			t.Fatal(err)
		}
		check("after updates, a removal and a create")
		kept, held, err := store.TermCounts(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(kept, held) || kept["t:org=t1 Cluster"] == 0 {
			t.Errorf("kept term counts %v, term rows %v", kept, held)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestTenantListsUseIndexes asserts the plans of a tenant's lists: no
// read of every resource (of the kind) for the count or the page, the
// default order and name order walked in an index (no sort), the first
// page and a page after a continuation token alike.
func TestTenantListsUseIndexes(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		tenancyFixture(t, s, 60)
		pg := s.Backend() == store.BackendPostgres
		tenant := "org=t1"
		if pg {
			pgTenancyBulk(t, s)
			tenant = "org=b7"
		}
		at := search.Cursor{now.Add(time.Hour), "00000000-0000-4000-8000-000000000020"}
		for _, tc := range []struct {
			name   string
			query  string
			order  []search.OrderTerm
			after  search.Cursor
			walk   bool // the page walks the term index
			sorted bool // the page is read in an index's order (no sort)
		}{
			{name: "first page", walk: true, sorted: true},
			{name: "a page after a token", after: at, walk: true, sorted: true},
			{name: "oldest first", order: []search.OrderTerm{{Column: "created_time"}}, walk: true, sorted: true},
			{name: "label and condition", query: "labels.shard = '1' and status.conditions.Ready = 'True'", walk: true, sorted: true},
			{name: "label and condition after a token", query: "labels.shard = '1' and status.conditions.Ready = 'True'", after: at, walk: true, sorted: true},
			{name: "by name", order: []search.OrderTerm{{Column: "name"}}, sorted: true},
			{name: "by name, descending", order: []search.OrderTerm{{Column: "name", Desc: true}}, sorted: true},
			{name: "a search with no term plan", query: "name like 'c-%' or labels.shard = '2'"},
		} {
			w, err := search.Translate(tc.query, s.Dialect(), search.Options{Table: "resources", Indexed: true})
			if err != nil {
				t.Fatal(err)
			}
			after := tc.after
			if after != nil && len(tc.order) > 0 {
				after = nil
			}
			count, page, err := store.ExplainList(context.Background(), s, store.ListQuery{Kind: resource.KindCluster, Where: w, Order: tc.order, After: after, Limit: 20, Tenant: tenant})
			if err != nil {
				t.Fatal(err)
			}
			for what, plan := range map[string]string{"count": count, "page": page} {
				if scan := fullScan(s.Backend(), plan); scan != "" {
					t.Errorf("%s: the %s reads every resource (%s); plan:\n%s", tc.name, what, scan, plan)
				}
			}
			walks := strings.Contains(page, "USING COVERING INDEX resource_terms_term (term=? AND kind=?")
			sorts := strings.Contains(page, "TEMP B-TREE")
			if pg {
				walks = strings.Contains(page, "using resource_terms_term on resource_terms d")
				sorts = strings.Contains(page, "Sort")
			}
			if walks != tc.walk {
				t.Errorf("%s: the page walks the term index: %t, want %t; plan:\n%s", tc.name, walks, tc.walk, page)
			}
			if tc.sorted && sorts {
				t.Errorf("%s: the page sorts instead of reading an index in order; plan:\n%s", tc.name, page)
			}
			if !tc.walk && !strings.Contains(page, "resources_tenant_") {
				t.Errorf("%s: the page does not use the tenancy's indexes; plan:\n%s", tc.name, page)
			}
		}
	})
}

// Names are unique per tenancy and kind (per parent for children); the
// same name in two tenancies is fine.
func TestNamesUniquePerTenancy(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		mk := func(id, name string, tenancy map[string]string) error {
			c := cluster(id, name)
			c.Tenancy = tenancy
			return s.InTx(ctx, func(tx store.Tx) error { return tx.CreateResource(ctx, c) })
		}
		for i, tn := range []map[string]string{nil, {"org": "a"}, {"org": "b"}, {"org": "a", "project": "x"}} {
			if err := mk(fmt.Sprintf("c%d", i), "same", tn); err != nil {
				t.Errorf("tenancy %v: %v", tn, err)
			}
		}
		for i, tn := range []map[string]string{nil, {"org": "a"}, {"project": "x", "org": "a"}} {
			if err := mk(fmt.Sprintf("d%d", i), "same", tn); !errors.Is(err, store.ErrNameConflict) {
				t.Errorf("a second %q in tenancy %v: %v, want a name conflict", "same", tn, err)
			}
		}
		got, err := s.GetResource(ctx, resource.KindCluster, "c3")
		if err != nil || fmt.Sprint(got.Tenancy) != "map[org:a project:x]" {
			t.Errorf("read back: %+v, %v", got, err)
		}
	})
}

// The relay reads each resource's tenancy from the outbox and from the
// start-up pass.
func TestTenancyReachesTheRelay(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		c := cluster("c1", "alpha")
		c.Tenancy = map[string]string{"org": "acme"}
		err := s.InTx(ctx, func(tx store.Tx) error {
			if err := tx.CreateResource(ctx, c); err != nil {
				return err
			}
			return tx.AppendOutbox(ctx, store.OutboxEntry{Kind: c.Kind, ResourceID: c.ID, Generation: 1, Reason: store.OutboxCreated, CreatedTime: now, Tenant: "org=acme"})
		})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.PendingOutbox(ctx, 10)
		if err != nil || len(rows) != 1 || rows[0].Tenant != "org=acme" {
			t.Errorf("outbox = %+v, %v", rows, err)
		}
		refs, err := s.LiveRefs(ctx, resource.KindCluster, "", 10)
		if err != nil || len(refs) != 1 || refs[0].Tenant != "org=acme" {
			t.Errorf("live refs = %+v, %v", refs, err)
		}
	})
}

// A database of the previous schema upgrades in place: its resources
// belong to no tenancy, their names stay unique among themselves, and
// tenants' resources of the same names can be added.
func TestTenancyUpgradeInPlace(t *testing.T) {
	atVersion(t, 9, func(t *testing.T, ctx context.Context, s store.Store) {
		createBeforeV6(t, s, cluster("c1", "alpha"), nodePool("n1", "c1", "pool"))
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate to %d: %v", store.SchemaVersion(), err)
		}
		got, err := s.GetResource(ctx, resource.KindCluster, "c1")
		if err != nil || got.Tenancy != nil {
			t.Fatalf("an old resource after the upgrade: %+v, %v", got, err)
		}
		if err := s.InTx(ctx, func(tx store.Tx) error { return tx.CreateResource(ctx, cluster("c2", "alpha")) }); !errors.Is(err, store.ErrNameConflict) {
			t.Errorf("a second alpha of no tenancy: %v", err)
		}
		c3 := cluster("c3", "alpha")
		c3.Tenancy = map[string]string{"org": "acme"}
		create(t, s, c3)
		if ids, total := walkTenant(t, s, resource.KindCluster, "org=acme", "", true, nil, 10); total != 1 || ids[0] != "c3" {
			t.Errorf("acme's clusters after the upgrade: %v (total %d)", ids, total)
		}
		if _, total := walkTenant(t, s, resource.KindCluster, "", "", true, nil, 10); total != 2 {
			t.Errorf("every cluster after the upgrade: total %d, want 2", total)
		}
	})
}

// AssignTenancy gives resources of no tenancy one, with what follows a
// tenancy: the tenant's lists and kept counts, the outbox rows and the
// change log. A name the tenancy uses, or a resource that has a tenancy,
// changes nothing.
func TestAssignTenancy(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		acme := map[string]string{"org": "acme"}
		old, pool, clash := cluster("c1", "legacy"), nodePool("n1", "c1", "pool"), cluster("c2", "taken")
		own := cluster("c3", "taken")
		own.Tenancy = acme
		err := s.InTx(ctx, func(tx store.Tx) error {
			for _, r := range []*resource.Resource{old, pool, clash, own} {
				if err := tx.CreateResource(ctx, r); err != nil {
					return err
				}
			}
			return tx.AppendOutbox(ctx, store.OutboxEntry{Kind: old.Kind, ResourceID: old.ID, Generation: 1, Reason: store.OutboxCreated, CreatedTime: now})
		})
		if err != nil {
			t.Fatal(err)
		}
		changes, err := s.ReadChanges(ctx, store.ChangeQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		seen := changes[len(changes)-1].Seq
		assign := func(id string, tenancy map[string]string, ids ...string) error {
			return s.InTx(ctx, func(tx store.Tx) error {
				var rs []*resource.Resource
				for _, id := range append([]string{id}, ids...) {
					kind := resource.KindCluster
					if strings.HasPrefix(id, "n") {
						kind = resource.KindNodePool
					}
					r, err := tx.LockResource(ctx, kind, id)
					if err != nil {
						return err
					}
					r.Tenancy, r.UpdatedTime, r.UpdatedBy = tenancy, now.Add(time.Hour), "operator"
					rs = append(rs, r)
				}
				return tx.AssignTenancy(ctx, rs...)
			})
		}
		if err := assign("c2", acme); !errors.Is(err, store.ErrNameConflict) {
			t.Errorf("a name acme uses: %v, want a name conflict", err)
		}
		if err := assign("c3", map[string]string{"org": "globex"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a resource of another tenancy: %v, want not found", err)
		}
		if err := assign("c1", acme, "n1"); err != nil {
			t.Fatalf("adopt c1 with its node pool: %v", err)
		}
		for _, id := range []string{"c1", "n1"} {
			r, err := s.GetResource(ctx, "", id)
			if err != nil || fmt.Sprint(r.Tenancy) != "map[org:acme]" || r.UpdatedBy != "operator" || !r.UpdatedTime.Equal(now.Add(time.Hour)) || r.Generation != 1 {
				t.Errorf("%s after adoption: %+v, %v", id, r, err)
			}
		}
		if r, err := s.GetResource(ctx, "", "c2"); err != nil || r.Tenancy != nil || r.UpdatedBy != "a@example.com" {
			t.Errorf("the clashing resource changed: %+v, %v", r, err)
		}
		if r, err := s.GetResource(ctx, "", "c3"); err != nil || fmt.Sprint(r.Tenancy) != "map[org:acme]" {
			t.Errorf("the resource of another tenancy changed: %+v, %v", r, err)
		}
		// The tenant's lists, on the term index and off it, with totals
		// from the kept counts.
		for _, indexed := range []bool{true, false} {
			if ids, total := walkTenant(t, s, resource.KindCluster, "org=acme", "", indexed, nil, 10); total != 2 || !sameSet(ids, []string{"c1", "c3"}) {
				t.Errorf("acme's clusters (indexed %t): %v (total %d)", indexed, ids, total)
			}
			if ids, total := walkTenant(t, s, resource.KindNodePool, "org=acme", "labels.env = 'dev'", indexed, nil, 10); total != 1 || ids[0] != "n1" {
				t.Errorf("acme's node pools (indexed %t): %v (total %d)", indexed, ids, total)
			}
		}
		if _, err := s.CompactTermCounts(ctx); err != nil {
			t.Fatal(err)
		}
		kept, held, err := store.TermCounts(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(kept, held) || kept["t:org=acme Cluster"] != 2 || kept["t:org=acme NodePool"] != 1 {
			t.Errorf("kept term counts %v, term rows %v", kept, held)
		}
		rows, err := s.PendingOutbox(ctx, 10)
		if err != nil || len(rows) != 1 || rows[0].Tenant != "org=acme" {
			t.Errorf("the outbox row of the adopted cluster: %+v, %v", rows, err)
		}
		changes, err = s.ReadChanges(ctx, store.ChangeQuery{After: seen, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var logged []string
		for _, c := range changes {
			logged = append(logged, fmt.Sprintf("%s %s %s", c.Type, c.Resource.ID, c.Tenant))
		}
		if want := []string{"MODIFIED c1 org=acme", "MODIFIED n1 org=acme"}; !slices.Equal(logged, want) {
			t.Errorf("change log after the adoptions: %v, want %v", logged, want)
		}
		// Once assigned, a tenancy does not move.
		if err := assign("c1", map[string]string{"org": "globex"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a second assignment: %v, want not found", err)
		}
	})
}
