package store_test

import (
	"context"
	"encoding/json"
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

// indexedSearches are the documented search fields with an equality (or,
// for times, a range) that an index must serve on both backends.
var indexedSearches = []string{
	"labels.shard = '3'",
	"labels['cost-center'] = 'eng'",
	"status.conditions.Ready = 'True'",
	"status.conditions.Ready = true",
	"spec.platform.type = 'gcp'",
	"spec.nodes = 3",
	"spec.enabled = true",
	"spec['node-pool'].max_size = 7",
	"spec.zones[1] = 'b'", // SQLite only: see pgBulkFixture
	"name = 'c-0007'",
	"id = '00000000-0000-4000-8000-000000000007'",
	"labels.shard = '3' and status.conditions.Ready = 'True' and spec.nodes = 3",
	"labels.shard in ('1', '2') and spec.platform.type = 'gcp'",
}

// indexFixture stores clusters whose specs, labels and conditions vary,
// including keys SQLite's json_tree quotes.
func indexFixture(t *testing.T, s store.Store, n int) {
	t.Helper()
	indexFixtureBy(t, s, n, create)
}

// indexFixtureBy is indexFixture written by create (createBeforeV6 for a
// database an older binary wrote).
func indexFixtureBy(t *testing.T, s store.Store, n int, create func(*testing.T, store.Store, ...*resource.Resource)) {
	t.Helper()
	for i := 0; i < n; i++ {
		c := cluster(fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("c-%04d", i))
		c.Labels = map[string]string{"shard": fmt.Sprint(i % 5)}
		if i%2 == 0 {
			c.Labels["cost-center"] = "eng"
		}
		c.Status.Conditions[0].Status = []resource.ConditionStatus{resource.StatusTrue, resource.StatusFalse}[i%2]
		spec := map[string]any{
			"platform": map[string]any{"type": []string{"gcp", "aws"}[i%2]},
			"nodes":    i % 7, "enabled": i%3 == 0,
			"node-pool": map[string]any{"max_size": float64(i%8) + map[bool]float64{true: 0, false: 0.5}[i%4 != 1]},
			"zones":     []string{"a", []string{"b", "c"}[i%2]},
			"version":   "3",
		}
		raw, _ := json.Marshal(spec)
		c.Spec = raw
		create(t, s, c)
	}
}

func listIDs(t *testing.T, s store.Store, query string, indexed bool) ([]string, int64) {
	t.Helper()
	return walkIDs(t, s, query, indexed, nil, 100)
}

// walkIDs reads every page of a search, size rows a page, following the
// continuation tokens; it returns the ids in order and the total, which
// must be the same on every page.
func walkIDs(t *testing.T, s store.Store, query string, indexed bool, order []search.OrderTerm, size int) ([]string, int64) {
	t.Helper()
	w, err := search.Translate(query, s.Dialect(), search.Options{Table: "resources", Indexed: indexed})
	if err != nil {
		t.Fatalf("translate %q: %v", query, err)
	}
	q := store.ListQuery{Kind: resource.KindCluster, Where: w, Order: order, Limit: size}
	var ids []string
	total := int64(-1)
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%s: more than 1,000 pages", query)
		}
		page, err := s.ListResources(context.Background(), q)
		if err != nil {
			t.Fatalf("list %q: %v", query, err)
		}
		if total >= 0 && page.Total != total {
			t.Errorf("%s: total %d on page %d, %d on the first", query, page.Total, pages+1, total)
		}
		total = page.Total
		for _, r := range page.Items {
			ids = append(ids, r.ID)
		}
		if page.Next == nil {
			return ids, total
		}
		q.After = page.Next
	}
}

// TestIndexedSearchMatchesExact: the index filters change plans, never
// results. Every query, including ones the index cannot serve, returns the
// same rows with and without them, after creates, updates and removals.
func TestIndexedSearchMatchesExact(t *testing.T) {
	queries := append(slices.Clone(indexedSearches),
		"spec.version = '3'", "spec.version = 3", "spec.nodes = '3'", "spec['node-pool'].max_size = 2.5",
		"spec.enabled = false", "spec.zones[0] = 'a'", "status.conditions.Ready = 'False'",
		"labels.shard != '3'", "status.conditions.Ready != 'True'", "spec.nodes > 3", "labels.shard in ('1', '9')",
		// Conjunctions answered from SQLite's term index alone
		// (search.TermPlan), with a number's residual check, a status
		// alone, and terms no resource holds together.
		"labels.shard = '3' and status.conditions.Ready = 'True'",
		"status.conditions.Ready = 'False' and labels['cost-center'] = 'eng'",
		"spec.platform.type = 'gcp' and spec.enabled = true and status.conditions.Ready = true",
		"labels.shard = '1' and spec['node-pool'].max_size = 5.5", "spec.nodes = 3 and labels.shard = '2'",
		"spec.zones[1] = 'c' and labels.shard = '2'",
		"labels.shard = '3' and labels.shard = '4'",
		"status.conditions.Ready = 'True' and status.conditions.Ready = 'False'",
		"status.conditions.Healthy = 'True'")
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		indexFixture(t, s, 40)
		// Node pools with the clusters' labels and statuses: a cluster
		// search must not count them.
		for i := 0; i < 8; i++ {
			np := nodePool(fmt.Sprintf("00000000-0000-4000-9000-%012d", i), "00000000-0000-4000-8000-000000000001", fmt.Sprintf("np-%d", i))
			np.Labels = map[string]string{"shard": "3", "cost-center": "eng"}
			np.Status.Conditions[0].Status = "True"
			create(t, s, np)
		}
		// Change some: a label, a condition and the spec of a few
		// resources, and remove one, so the triggers' update paths run.
		err := s.InTx(ctx, func(tx store.Tx) error {
			for i := 0; i < 6; i++ {
				r, err := tx.LockResource(ctx, resource.KindCluster, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
				if err != nil {
					return err
				}
				r.Labels["shard"] = "3"
				r.Status.Conditions[0].Status = "True"
				r.Spec = json.RawMessage(`{"nodes":3,"platform":{"type":"gcp"},"enabled":true,"version":3}`)
				if err := tx.UpdateResource(ctx, r); err != nil {
					return err
				}
			}
			// Status changes alone, as aggregation writes them (only the
			// conditions trigger runs): a status flips, a condition is
			// added, and one is rewritten with its status unchanged.
			for i := 20; i < 26; i++ {
				r, err := tx.LockResource(ctx, resource.KindCluster, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
				if err != nil {
					return err
				}
				switch i % 3 {
				case 0:
					r.Status.Conditions[0].Status = map[resource.ConditionStatus]resource.ConditionStatus{resource.StatusTrue: resource.StatusFalse, resource.StatusFalse: resource.StatusTrue}[r.Status.Conditions[0].Status]
				case 1:
					r.Status.Conditions = append(r.Status.Conditions, resource.Condition{Type: "Healthy", Status: "True", CreatedTime: now, LastUpdatedTime: now, LastTransitionTime: now})
				default:
					r.Status.Conditions[0].LastUpdatedTime = now.Add(time.Minute)
				}
				if err := tx.UpdateState(ctx, r); err != nil {
					return err
				}
			}
			return tx.RemoveResource(ctx, "00000000-0000-4000-8000-000000000010")
		})
		if err != nil {
			t.Fatal(err)
		}
		// On PostgreSQL a spec equality beside a term is checked on the
		// walked rows, or, where that walk would be long, the page is read
		// by the SQL form after the kept count: both ways must agree.
		walkBounds := []int64{store.MaxSpecWalk(s)}
		if s.Backend() == store.BackendPostgres {
			walkBounds = append(walkBounds, 0)
		}
		for _, bound := range walkBounds {
			restore := store.SetMaxSpecWalk(s, bound)
			for _, q := range queries {
				exact, exactTotal := listIDs(t, s, q, false)
				got, total := listIDs(t, s, q, true)
				if !slices.Equal(got, exact) || total != exactTotal {
					t.Errorf("%s (walk bound %d): indexed search returned %d rows (total %d), exact %d (total %d)\n got %v\nwant %v", q, bound, len(got), total, len(exact), exactTotal, got, exact)
				}
				// Pages of 3 by continuation token, in both directions of
				// the default order, give the same rows.
				for _, order := range [][]search.OrderTerm{nil, {{Column: "created_time"}}} {
					want, _ := walkIDs(t, s, q, false, order, 100)
					paged, pagedTotal := walkIDs(t, s, q, true, order, 3)
					if !slices.Equal(paged, want) || pagedTotal != exactTotal {
						t.Errorf("%s (order %v, walk bound %d): indexed pages of 3 returned %v (total %d), want %v (total %d)", q, order, bound, paged, pagedTotal, want, exactTotal)
					}
				}
			}
			restore()
		}
		for _, q := range queries {
			_, exactTotal := listIDs(t, s, q, false)
			// Some queries match nothing by design: an absent value, a
			// fraction no fixture holds, two values of one field, and on
			// SQLite a quoted number (text never equals a number there).
			emptyByDesign := strings.Contains(q, "'9'") || strings.Contains(q, "max_size = 2.5") ||
				strings.Contains(q, "'3' and labels.shard = '4'") || strings.Contains(q, "'True' and status.conditions.Ready = 'False'") ||
				q == "spec.nodes = '3'" && s.Backend() == store.BackendSQLite
			if exactTotal == 0 && !emptyByDesign {
				t.Errorf("%s: the fixture matches nothing; the comparison proves nothing", q)
			}
		}
	})
}

// TestSearchUsesIndexes asserts the plans: for every documented field in
// indexedSearches, neither the count nor the page reads the whole
// resources table.
func TestSearchUsesIndexes(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		indexFixture(t, s, 50)
		if s.Backend() == store.BackendPostgres {
			pgBulkFixture(t, s)
		}
		for _, q := range indexedSearches {
			if s.Backend() == store.BackendPostgres && strings.Contains(q, "[1]") {
				continue
			}
			w, err := search.Translate(q, s.Dialect(), search.Options{Table: "resources", Indexed: true})
			if err != nil {
				t.Fatalf("translate %q: %v", q, err)
			}
			count, page, err := store.ExplainList(context.Background(), s, store.ListQuery{Kind: resource.KindCluster, Where: w, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			for what, plan := range map[string]string{"count": count, "page": page} {
				if scan := fullScan(s.Backend(), plan); scan != "" {
					t.Errorf("%s: the %s reads the whole table (%s); plan:\n%s", q, what, scan, plan)
				}
			}
		}
	})
}

// fullScan returns the plan line that reads every row of resources (of the
// kind searched), or "".
func fullScan(backend, plan string) string {
	for _, line := range strings.Split(plan, "\n") {
		l := strings.TrimSpace(line)
		if backend == store.BackendSQLite && (strings.HasPrefix(l, "SCAN resources") || strings.HasSuffix(l, "(kind=?)")) ||
			backend == store.BackendPostgres && (strings.Contains(l, "Seq Scan on resources") || l == "Index Cond: (kind = 'Cluster'::text)") {
			return l
		}
	}
	return ""
}

// pgBulkFixture adds 20,000 analysed clusters in which each searched value
// is rare, so PostgreSQL's cost-based planner, which reads a small table
// whole whatever its indexes, has the choice a large fleet gives it. An
// array element (spec.zones[1]) has no PostgreSQL index: containment
// cannot tell an element's position.
func pgBulkFixture(t *testing.T, s store.Store) {
	t.Helper()
	_, err := s.SQLDB().ExecContext(context.Background(), `INSERT INTO resources
		(id, kind, name, generation, spec, labels, conditions, created_time, updated_time, created_by, updated_by, condition_terms)
		SELECT 'bulk-' || g, 'Cluster', 'bulk-' || g, 1,
			jsonb_build_object('platform', jsonb_build_object('type', 'p' || (g % 100)), 'nodes', 100 + g % 100,
				'enabled', false, 'node-pool', jsonb_build_object('max_size', 100 + g % 100)),
			jsonb_build_object('shard', 's' || (g % 100), 'cost-center', 'c' || (g % 100)),
			jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'False')),
			now(), now(), 'bulk', 'bulk', '["c:Ready=False"]'
		FROM generate_series(1, 20000) AS g`)
	if err == nil {
		_, err = s.SQLDB().ExecContext(context.Background(), `ANALYZE resources, resource_terms`)
	}
	if err != nil {
		t.Fatalf("bulk fixture: %v", err)
	}
}

// TestIndexesUpgradeInPlace: a database written by a schema-2 binary gains
// the indexes when migrated, rows already stored included.
func TestIndexesUpgradeInPlace(t *testing.T) {
	atVersion(t, 2, func(t *testing.T, ctx context.Context, s store.Store) {
		indexFixtureBy(t, s, 12, createBeforeV6)
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate to %d: %v", store.SchemaVersion(), err)
		}
		queries := []string{"labels.shard = '3'", "status.conditions.Ready = 'True'", "status.conditions.Ready = 'False' and labels.shard = '1'",
			"spec.platform.type = 'gcp'", "spec['node-pool'].max_size = 7"}
		check := func(when string) {
			t.Helper()
			kept, held, err := store.TermCounts(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(held) == 0 || !maps.Equal(kept, held) {
				t.Errorf("kept term counts %s: %v, term rows %v", when, kept, held)
			}
			for _, q := range queries {
				exact, _ := listIDs(t, s, q, false)
				got, _ := listIDs(t, s, q, true)
				if len(exact) == 0 || !slices.Equal(got, exact) {
					t.Errorf("%s %s: indexed %v, exact %v", q, when, got, exact)
				}
			}
		}
		check("after the upgrade")
		// The first writes of rows stored before version 6: one keeps its
		// statuses, one flips Ready.
		err := s.InTx(ctx, func(tx store.Tx) error {
			for i, flip := range map[int]bool{1: false, 3: true} {
				r, err := tx.LockResource(ctx, resource.KindCluster, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
				if err != nil {
					return err
				}
				r.Status.Conditions[0].LastUpdatedTime = now.Add(time.Hour)
				if flip {
					r.Status.Conditions[0].Status = "True"
				}
				if err := tx.UpdateState(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		check("after the first writes")
	})
}

// TestDeepPageIsARangeScan: a page read after a continuation token's
// position, in the default order, starts inside resources_kind_created and
// reads it in order: no sort, no rows skipped past, whatever the depth.
func TestDeepPageIsARangeScan(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		indexFixture(t, s, 50)
		if s.Backend() == store.BackendPostgres {
			pgBulkFixture(t, s)
		}
		at := search.Cursor{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "bulk-5000"}
		_, page, err := store.ExplainList(context.Background(), s, store.ListQuery{Kind: resource.KindCluster, After: at, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		index, sort := "Index Scan using resources_kind_created", "Sort"
		if s.Backend() == store.BackendSQLite {
			index, sort = "USING INDEX resources_kind_created (kind=? AND created_time<?)", "TEMP B-TREE"
		}
		if !strings.Contains(page, index) || strings.Contains(page, sort) {
			t.Errorf("a page after a position: want %q and no %q; plan:\n%s", index, sort, page)
		}
	})
}

// TestTermPlanReadsTheIndex: a conjunction of indexed equalities is
// counted from resource_terms alone (on SQLite a number's equality adds a
// check of the row, by primary key), and its page walks one term's rows
// in the list's order: no sort, no scan of resources. PostgreSQL's index
// has labels and conditions only.
func TestTermPlanReadsTheIndex(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		indexFixture(t, s, 50)
		pg := s.Backend() == store.BackendPostgres
		if pg {
			pgBulkFixture(t, s)
		}
		for _, tc := range []struct {
			query    string
			order    []search.OrderTerm
			residual bool
			// PostgreSQL's index has no spec terms: its spec equalities
			// are checked on the rows, and alone have no plan.
			pgResidual, pgNoPlan bool
		}{
			{query: "labels.shard = '3' and status.conditions.Ready = 'True'"},
			{query: "status.conditions.Ready = 'False'", order: []search.OrderTerm{{Column: "created_time"}}},
			{query: "spec.platform.type = 'gcp' and spec.enabled = true and labels['cost-center'] = 'eng'", pgResidual: true},
			{query: "labels.shard = '3' and status.conditions.Ready = 'True' and spec.nodes = 3", residual: true, pgResidual: true},
			{query: "spec.platform.type = 'gcp' and spec.enabled = true", pgNoPlan: true},
		} {
			w, err := search.Translate(tc.query, s.Dialect(), search.Options{Table: "resources", Indexed: true})
			if err != nil {
				t.Fatal(err)
			}
			if pg && tc.pgNoPlan {
				if w.Plan != nil {
					t.Errorf("%s: a term plan on PostgreSQL, whose index has no spec terms", tc.query)
				}
				continue
			}
			if pg {
				tc.residual = tc.pgResidual
			}
			if w.Plan == nil {
				t.Fatalf("%s: no term plan", tc.query)
			}
			at := search.Cursor{now, "00000000-0000-4000-8000-000000000020"}
			count, page, err := store.ExplainList(context.Background(), s, store.ListQuery{Kind: resource.KindCluster, Where: w, Order: tc.order, After: at, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			readsRows := strings.Contains(count, "SEARCH resources")
			walks := strings.Contains(page, "SEARCH d USING COVERING INDEX resource_terms_term (term=? AND kind=? AND created_time")
			sorts := strings.Contains(page, "TEMP B-TREE") || strings.Contains(page, "SCAN")
			if pg {
				readsRows = strings.Contains(count, "on resources ")
				walks = strings.Contains(page, "using resource_terms_term on resource_terms d")
				sorts = strings.Contains(page, "Sort") || strings.Contains(page, "Seq Scan")
			}
			if readsRows != tc.residual || strings.Contains(count, "SCAN") || strings.Contains(count, "Seq Scan") {
				t.Errorf("%s: the count reads resources rows: %v, want %v, and never scans; plan:\n%s", tc.query, readsRows, tc.residual, count)
			}
			if !walks || sorts {
				t.Errorf("%s: the page does not walk the first term's rows in order from the position; plan:\n%s", tc.query, page)
			}
		}
	})
}

// compact folds the appended term-count changes (PostgreSQL) and, there,
// checks that it moved some: every caller has just changed terms.
func compact(t *testing.T, s store.Store) {
	t.Helper()
	n, err := s.CompactTermCounts(context.Background())
	if err != nil {
		t.Fatalf("compact term counts: %v", err)
	}
	if s.Backend() == store.BackendPostgres && n == 0 {
		t.Fatal("compaction moved no term after a change of terms")
	}
}

// TestTermCountsFollowEveryChange: both backends keep the totals of
// term-plan searches while the versions of their terms are unchanged
// (PostgreSQL's versions move with appended changes and with their
// compaction, which runs between every other step here). Each change
// below moves a total; the search, asked before and after, must agree
// with the exact SQL form every time (a stale total, or a term the
// triggers missed, fails).
func TestTermCountsFollowEveryChange(t *testing.T) {
	eachBackend(t, termCountsFollowEveryChange)
}

func termCountsFollowEveryChange(t *testing.T, s store.Store) {
	ctx := context.Background()
	indexFixture(t, s, 30)
	for i := 0; i < 4; i++ {
		np := nodePool(fmt.Sprintf("00000000-0000-4000-9000-%012d", i), "00000000-0000-4000-8000-000000000003", fmt.Sprintf("np-%d", i))
		np.Labels = map[string]string{"shard": "3"}
		create(t, s, np)
	}
	queries := map[string]string{
		"shard3ready": "labels.shard = '3' and status.conditions.Ready = 'True'",
		"nodes":       "spec.nodes = 3 and labels.shard = '3'",
		"notReady":    "status.conditions.Ready = 'False'",
		"nodepools":   "labels.shard = '3'",
		"nobody":      "labels.shard = 'none' and status.conditions.Ready = 'True'",
	}
	kinds := map[string]string{"nodepools": resource.KindNodePool}
	totals := func() map[string]int64 {
		out := map[string]int64{}
		for name, q := range queries {
			kind := kinds[name]
			if kind == "" {
				kind = resource.KindCluster
			}
			var got [2][]string
			var total [2]int64
			for i, indexed := range []bool{false, true, true} { // the second indexed read is served from the kept total
				w, err := search.Translate(q, s.Dialect(), search.Options{Table: "resources", Indexed: indexed})
				if err != nil {
					t.Fatal(err)
				}
				page, err := s.ListResources(ctx, store.ListQuery{Kind: kind, Where: w, Limit: 100})
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				var ids []string
				for _, r := range page.Items {
					ids = append(ids, r.ID)
				}
				j := min(i, 1)
				if i == 2 && (!slices.Equal(ids, got[1]) || page.Total != total[1]) {
					t.Errorf("%s: asked again, %v (total %d), first %v (total %d)", q, ids, page.Total, got[1], total[1])
				}
				got[j], total[j] = ids, page.Total
			}
			if !slices.Equal(got[1], got[0]) || total[1] != total[0] {
				t.Errorf("%s: indexed %v (total %d), exact %v (total %d)", q, got[1], total[1], got[0], total[0])
			}
			out[name] = total[0]
		}
		return out
	}
	update := func(id string, change func(r *resource.Resource), state bool) {
		t.Helper()
		err := s.InTx(ctx, func(tx store.Tx) error {
			r, err := tx.LockResource(ctx, resource.KindCluster, id)
			if err != nil {
				return err
			}
			change(r)
			if state {
				return tx.UpdateState(ctx, r)
			}
			return tx.UpdateResource(ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	id := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
	// Fixture: cluster i has shard i%5, Ready True for even i, nodes i%7.
	steps := []struct {
		name   string
		change func()
		moves  string
	}{
		{"create a Ready cluster in shard 3", func() {
			c := cluster(id(100), "c-new")
			c.Labels = map[string]string{"shard": "3"}
			c.Status.Conditions[0].Status = "True"
			create(t, s, c)
		}, "shard3ready"},
		{"move a Ready cluster out of shard 3", func() { update(id(18), func(r *resource.Resource) { r.Labels["shard"] = "4" }, false) }, "shard3ready"},
		{"a status flips (aggregation's write)", func() {
			update(id(9), func(r *resource.Resource) { r.Status.Conditions[0].Status = "True" }, true)
		}, "notReady"},
		{"a number in the spec changes", func() {
			update(id(3), func(r *resource.Resource) { r.Spec = json.RawMessage(`{"nodes":4}`) }, false)
		}, "nodes"},
		// Neither status's count moves, only who holds it: a kept total
		// must notice by its terms' versions, not their counts.
		{"two statuses flip the other way in one transaction", func() {
			err := s.InTx(ctx, func(tx store.Tx) error {
				for _, c := range []struct {
					i      int
					status resource.ConditionStatus
				}{{2, "False"}, {13, "True"}} { // shard 2 leaves Ready, shard 3 joins
					r, err := tx.LockResource(ctx, resource.KindCluster, id(c.i))
					if err != nil {
						return err
					}
					r.Status.Conditions[0].Status = c.status
					if err := tx.UpdateState(ctx, r); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}, "shard3ready"},
		{"a cluster with node pools is removed", func() {
			if err := s.InTx(ctx, func(tx store.Tx) error { return tx.RemoveResource(ctx, id(3)) }); err != nil {
				t.Fatal(err)
			}
		}, "nodepools"},
		// Not followed by a compaction: on PostgreSQL only the spec
		// marker's appended change says that this total moved.
		{"a spec in shard 3 takes the number", func() {
			update(id(8), func(r *resource.Resource) { r.Spec = json.RawMessage(`{"nodes":3}`) }, false)
		}, "nodes"},
	}
	before := totals()
	for _, q := range []string{"shard3ready", "nodes", "notReady", "nodepools"} { // "nobody" is 0 by design
		if before[q] == 0 {
			t.Fatalf("%s matches nothing in the fixture; the test proves nothing", queries[q])
		}
	}
	// Kept: the searches of several terms ("nodes" on PostgreSQL has one
	// term and a spec residual). A one-term search reads its total from
	// the kept counts, and one with a term nobody holds is 0.
	if n, want := store.CachedCounts(s), 2; n != want {
		t.Fatalf("%d totals kept after %d searches, want %d", n, len(queries), want)
	}
	for i, step := range steps {
		step.change()
		if i%2 == 1 {
			compact(t, s)
		}
		after := totals()
		if after[step.moves] == before[step.moves] {
			t.Errorf("%s: the total of %s stayed %d; the step tests nothing", step.name, queries[step.moves], after[step.moves])
		}
		before = after
	}
	// A rewrite of the conditions that changes no status keeps every total.
	update(id(5), func(r *resource.Resource) { r.Status.Conditions[0].LastUpdatedTime = now.Add(time.Hour) }, true)
	if got := totals(); !maps.Equal(got, before) {
		t.Errorf("totals after a rewrite with no status change: %v, want %v", got, before)
	}
}
