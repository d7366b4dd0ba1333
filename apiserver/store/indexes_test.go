package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// indexedSearches are the documented search fields with an equality (or,
// for times, a range) that an index must serve on both backends (a
// condition alone: PostgreSQL only).
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
	for i := 0; i < n; i++ {
		c := cluster(fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("c-%04d", i))
		c.Labels = map[string]string{"shard": fmt.Sprint(i % 5)}
		if i%2 == 0 {
			c.Labels["cost-center"] = "eng"
		}
		c.Status.Conditions[0].Status = []string{"True", "False"}[i%2]
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
	w, err := search.Translate(query, s.Dialect(), search.Options{Table: "resources", Indexed: indexed})
	if err != nil {
		t.Fatalf("translate %q: %v", query, err)
	}
	page, err := s.ListResources(context.Background(), store.ListQuery{Kind: resource.KindCluster, Where: w, Limit: 100})
	if err != nil {
		t.Fatalf("list %q: %v", query, err)
	}
	var ids []string
	for _, r := range page.Items {
		ids = append(ids, r.ID)
	}
	return ids, page.Total
}

// TestIndexedSearchMatchesExact: the index filters change plans, never
// results. Every query, including ones the index cannot serve, returns the
// same rows with and without them, after creates, updates and removals.
func TestIndexedSearchMatchesExact(t *testing.T) {
	queries := append(slices.Clone(indexedSearches),
		"spec.version = '3'", "spec.version = 3", "spec.nodes = '3'", "spec['node-pool'].max_size = 2.5",
		"spec.enabled = false", "spec.zones[0] = 'a'", "status.conditions.Ready = 'False'",
		"labels.shard != '3'", "status.conditions.Ready != 'True'", "spec.nodes > 3", "labels.shard in ('1', '9')")
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		indexFixture(t, s, 40)
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
			return tx.RemoveResource(ctx, "00000000-0000-4000-8000-000000000010")
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			exact, exactTotal := listIDs(t, s, q, false)
			got, total := listIDs(t, s, q, true)
			if !slices.Equal(got, exact) || total != exactTotal {
				t.Errorf("%s: indexed search returned %d rows (total %d), exact %d (total %d)\n got %v\nwant %v", q, len(got), total, len(exact), exactTotal, got, exact)
			}
			// Three queries match nothing by design: an absent value, a
			// fraction no fixture holds, and on SQLite a quoted number
			// (text never equals a number there).
			emptyByDesign := strings.Contains(q, "'9'") || strings.Contains(q, "max_size = 2.5") ||
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
			// SQLite keeps no index of conditions (every status report
			// rewrites them): a condition alone reads every resource of
			// the kind; beside a label or spec term it only narrows.
			if s.Backend() == store.BackendSQLite && strings.HasPrefix(q, "status.conditions.") {
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
		(id, kind, name, generation, spec, labels, conditions, created_time, updated_time, created_by, updated_by)
		SELECT 'bulk-' || g, 'Cluster', 'bulk-' || g, 1,
			jsonb_build_object('platform', jsonb_build_object('type', 'p' || (g % 100)), 'nodes', 100 + g % 100,
				'enabled', false, 'node-pool', jsonb_build_object('max_size', 100 + g % 100)),
			jsonb_build_object('shard', 's' || (g % 100), 'cost-center', 'c' || (g % 100)),
			jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'False')),
			now(), now(), 'bulk', 'bulk'
		FROM generate_series(1, 20000) AS g`)
	if err == nil {
		_, err = s.SQLDB().ExecContext(context.Background(), `ANALYZE resources`)
	}
	if err != nil {
		t.Fatalf("bulk fixture: %v", err)
	}
}

// TestIndexesUpgradeInPlace: a database written by a schema-2 binary gains
// the indexes when migrated, rows already stored included.
func TestIndexesUpgradeInPlace(t *testing.T) {
	atVersion(t, 2, func(t *testing.T, ctx context.Context, s store.Store) {
		indexFixture(t, s, 12)
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate to %d: %v", store.SchemaVersion(), err)
		}
		for _, q := range []string{"labels.shard = '3'", "status.conditions.Ready = 'True'", "spec.platform.type = 'gcp'", "spec['node-pool'].max_size = 7"} {
			exact, _ := listIDs(t, s, q, false)
			got, _ := listIDs(t, s, q, true)
			if len(exact) == 0 || !slices.Equal(got, exact) {
				t.Errorf("%s after the upgrade: indexed %v, exact %v", q, got, exact)
			}
		}
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
