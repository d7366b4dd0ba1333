package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// configs gives each backend a fresh database: SQLite in a temporary
// directory, and PostgreSQL in the integration tier only, where the test
// servers run.
func configs(t *testing.T) []store.Config {
	t.Helper()
	out := []store.Config{{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hyperfleet.db")}}
	if testenv.Integration {
		out = append([]store.Config{{Driver: store.BackendPostgres, URL: testenv.PostgresDB(t)}}, out...)
	}
	return out
}

// backends opens a migrated store per backend; the suite runs on each.
func backends(t *testing.T) map[string]store.Store {
	t.Helper()
	out := map[string]store.Store{}
	for _, cfg := range configs(t) {
		cfg.Logger = zerolog.Nop()
		cfg.ChangeLog = true // as an API serving watches writes it
		s, err := store.Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("open %s: %v", cfg.Driver, err)
		}
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatalf("migrate %s: %v", cfg.Driver, err)
		}
		t.Cleanup(func() { s.Close() })
		out[cfg.Driver] = s
	}
	return out
}

func eachBackend(t *testing.T, fn func(t *testing.T, s store.Store)) {
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) { fn(t, s) })
	}
}

// atVersion runs fn once per backend on a new database migrated only to
// version, as an older binary would have left it; fn upgrades it.
func atVersion(t *testing.T, version int, fn func(t *testing.T, ctx context.Context, s store.Store)) {
	for _, cfg := range configs(t) {
		t.Run(cfg.Driver, func(t *testing.T) {
			ctx := context.Background()
			cfg.Logger = zerolog.Nop()
			s, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := store.MigrateTo(ctx, s, version); err != nil {
				t.Fatalf("migrate to version %d: %v", version, err)
			}
			fn(t, ctx, s)
		})
	}
}

var now = time.Date(2025, 3, 4, 5, 6, 7, 891234000, time.UTC)

func cluster(id, name string) *resource.Resource {
	return &resource.Resource{
		Kind: resource.KindCluster, ID: id, Name: name, Generation: 1,
		Spec:        json.RawMessage(`{"platform":{"type":"gcp"},"replicas":3}`),
		Labels:      map[string]string{"env": "dev"},
		Status:      resource.Status{Conditions: []resource.Condition{{Type: "Ready", Status: "False", CreatedTime: now, LastUpdatedTime: now, LastTransitionTime: now}}},
		CreatedTime: now, UpdatedTime: now, CreatedBy: "a@example.com", UpdatedBy: "a@example.com",
	}
}

func nodePool(id, parent, name string) *resource.Resource {
	r := cluster(id, name)
	r.Kind = resource.KindNodePool
	r.OwnerReferences = &resource.OwnerReference{Kind: resource.KindCluster, ID: parent}
	return r
}

func create(t *testing.T, s store.Store, rs ...*resource.Resource) {
	t.Helper()
	err := s.InTx(context.Background(), func(tx store.Tx) error {
		for _, r := range rs {
			if err := tx.CreateResource(context.Background(), r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
}

// createBeforeV6 stores resources as a binary before schema version 6
// did, into a database it left.
func createBeforeV6(t *testing.T, s store.Store, rs ...*resource.Resource) {
	t.Helper()
	if err := store.CreateBeforeV6(context.Background(), s, rs...); err != nil {
		t.Fatalf("create: %v", err)
	}
}

func TestResourceRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		create(t, s, cluster("c1", "alpha"), nodePool("n1", "c1", "pool"))
		got, err := s.GetResource(ctx, resource.KindCluster, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "alpha" || got.Generation != 1 || got.Labels["env"] != "dev" || got.Href != "/api/hyperfleet/v1/clusters/c1" {
			t.Errorf("round trip: %+v", got)
		}
		if !got.CreatedTime.Equal(now.Truncate(time.Microsecond)) || got.CreatedTime.Location() != time.UTC {
			t.Errorf("created_time = %v, want %v in UTC", got.CreatedTime, now)
		}
		var spec map[string]any
		if err := json.Unmarshal(got.Spec, &spec); err != nil || spec["replicas"] != float64(3) {
			t.Errorf("spec = %s", got.Spec)
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != "Ready" {
			t.Errorf("conditions = %+v", got.Status.Conditions)
		}
		np, err := s.GetResource(ctx, resource.KindNodePool, "n1")
		if err != nil {
			t.Fatal(err)
		}
		if np.OwnerReferences == nil || np.OwnerReferences.ID != "c1" || np.Href != "/api/hyperfleet/v1/clusters/c1/nodepools/n1" {
			t.Errorf("node pool owner/href = %+v %s", np.OwnerReferences, np.Href)
		}
		if _, err := s.GetResource(ctx, resource.KindNodePool, "c1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get with the wrong kind: %v, want ErrNotFound", err)
		}
	})
}

func TestNameUniqueAmongSiblings(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		create(t, s, cluster("c1", "alpha"), cluster("c2", "beta"), nodePool("n1", "c1", "pool"))
		err := s.InTx(ctx, func(tx store.Tx) error { return tx.CreateResource(ctx, cluster("c3", "alpha")) })
		if !errors.Is(err, store.ErrNameConflict) {
			t.Errorf("duplicate cluster name: %v, want ErrNameConflict", err)
		}
		// The same node pool name under another cluster is fine.
		create(t, s, nodePool("n2", "c2", "pool"))
		err = s.InTx(ctx, func(tx store.Tx) error { return tx.CreateResource(ctx, nodePool("n3", "c1", "pool")) })
		if !errors.Is(err, store.ErrNameConflict) {
			t.Errorf("duplicate node pool name: %v", err)
		}
		// Removal frees the name.
		if err := s.InTx(ctx, func(tx store.Tx) error { return tx.RemoveResource(ctx, "c1") }); err != nil {
			t.Fatal(err)
		}
		create(t, s, cluster("c4", "alpha"))
	})
}

func TestRemoveCascades(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		create(t, s, cluster("c1", "alpha"), nodePool("n1", "c1", "pool"))
		st := resource.AdapterStatus{Adapter: "a", ObservedGeneration: 1, ObservedTime: now, CreatedTime: now, LastReportTime: now,
			Conditions: []resource.AdapterCondition{{Type: "Available", Status: "True", LastTransitionTime: now}}}
		err := s.InTx(ctx, func(tx store.Tx) error {
			if err := tx.PutStatus(ctx, "c1", st); err != nil {
				return err
			}
			return tx.PutStatus(ctx, "n1", st)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.InTx(ctx, func(tx store.Tx) error { return tx.RemoveResource(ctx, "c1") }); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetResource(ctx, resource.KindNodePool, "n1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("node pool survived its cluster: %v", err)
		}
		for _, id := range []string{"c1", "n1"} {
			if sts, total, err := s.ListStatuses(ctx, id, 0, 10); err != nil || total != 0 || len(sts) != 0 {
				t.Errorf("statuses of %s survived: %v %d %v", id, sts, total, err)
			}
		}
	})
}

func TestStatusUpsert(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		create(t, s, cluster("c1", "alpha"))
		put := func(adapter string, gen int64) {
			st := resource.AdapterStatus{Adapter: adapter, ObservedGeneration: gen, ObservedTime: now, CreatedTime: now, LastReportTime: now.Add(time.Duration(gen) * time.Second),
				Conditions: []resource.AdapterCondition{{Type: "Available", Status: "True", LastTransitionTime: now}},
				Data:       json.RawMessage(`{"k":"v"}`)}
			if err := s.InTx(ctx, func(tx store.Tx) error { return tx.PutStatus(ctx, "c1", st) }); err != nil {
				t.Fatal(err)
			}
		}
		put("b", 1)
		put("a", 1)
		put("a", 2)
		sts, total, err := s.ListStatuses(ctx, "c1", 0, 10)
		if err != nil || total != 2 || len(sts) != 2 {
			t.Fatalf("statuses = %+v, %d, %v", sts, total, err)
		}
		if sts[0].Adapter != "a" || sts[0].ObservedGeneration != 2 || string(sts[0].Data) == "" {
			t.Errorf("first status = %+v", sts[0])
		}
		if !sts[0].LastReportTime.Equal(now.Add(2 * time.Second).Truncate(time.Microsecond)) {
			t.Errorf("last_report_time = %v", sts[0].LastReportTime)
		}
		page, _, _ := s.ListStatuses(ctx, "c1", 1, 1)
		if len(page) != 1 || page[0].Adapter != "b" {
			t.Errorf("second page = %+v", page)
		}
	})
}

func TestListSearchOrderPage(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		for i, name := range []string{"alpha", "bravo", "charlie", "delta"} {
			c := cluster(string(rune('a'+i)), name)
			c.CreatedTime = now.Add(time.Duration(i) * time.Minute)
			c.Generation = int64(i + 1)
			if i%2 == 0 {
				c.Labels["tier"] = "gold"
				c.Status.Conditions[0].Status = "True"
				c.Spec = json.RawMessage(`{"replicas":5,"platform":{"type":"aws"},"enabled":true}`)
			}
			create(t, s, c)
		}
		list := func(query string, order []search.OrderTerm, offset, limit int) ([]string, int64) {
			t.Helper()
			w, err := search.Translate(query, s.Dialect(), search.Options{Table: "resources"})
			if err != nil {
				t.Fatalf("translate %q: %v", query, err)
			}
			page, err := s.ListResources(ctx, store.ListQuery{Kind: resource.KindCluster, Where: w, Order: order, Offset: offset, Limit: limit})
			if err != nil {
				t.Fatalf("list %q: %v", query, err)
			}
			var names []string
			for _, r := range page.Items {
				names = append(names, r.Name)
			}
			return names, page.Total
		}
		cases := []struct {
			query string
			want  string
		}{
			{"", "delta charlie bravo alpha"},
			{"labels.tier='gold'", "charlie alpha"},
			{"labels.tier!='gold'", "delta bravo"},
			{"status.conditions.Ready='True'", "charlie alpha"},
			{"status.conditions.Ready!='True'", "delta bravo"},
			{"spec.replicas >= 4", "charlie alpha"},
			{"spec.replicas < 4", "delta bravo"},
			{"spec.platform.type = 'aws'", "charlie alpha"},
			{"spec.enabled = true", "charlie alpha"},
			{"spec.enabled != true", "delta bravo"},
			{"generation > 2", "delta charlie"},
			{"name like 'b%'", "bravo"},
			{"name like 'B%'", ""},
			{"name in ('alpha', 'delta')", "delta alpha"},
			{"created_time >= '" + now.Add(2*time.Minute).Format(time.RFC3339Nano) + "'", "delta charlie"},
			{"created_time < '" + now.Add(time.Minute).Format(time.RFC3339Nano) + "'", "alpha"},
			{"deleted_time > '2000-01-01'", ""},
			{"not (name = 'alpha') and labels.tier = 'gold'", "charlie"},
		}
		for _, c := range cases {
			names, total := list(c.query, nil, 0, 10)
			got := ""
			for i, n := range names {
				if i > 0 {
					got += " "
				}
				got += n
			}
			if got != c.want || total != int64(len(names)) {
				t.Errorf("search %q = %q (total %d), want %q", c.query, got, total, c.want)
			}
		}
		names, total := list("", []search.OrderTerm{{Column: "name"}}, 1, 2)
		if total != 4 || len(names) != 2 || names[0] != "bravo" || names[1] != "charlie" {
			t.Errorf("page 2 of 2 by name = %v (total %d)", names, total)
		}
		if names, total := list("", nil, 10, 2); len(names) != 0 || total != 4 {
			t.Errorf("page past the end = %v (total %d)", names, total)
		}
	})
}

func TestOutbox(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		err := s.InTx(ctx, func(tx store.Tx) error {
			for i := int64(1); i <= 3; i++ {
				e := store.OutboxEntry{Kind: "Cluster", ResourceID: "c1", Generation: i, Reason: store.OutboxUpdated, CreatedTime: now}
				if i == 3 {
					e.TraceParent = traceParent
				}
				if err := tx.AppendOutbox(ctx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// A rolled-back transaction leaves no entry behind.
		_ = s.InTx(ctx, func(tx store.Tx) error {
			_ = tx.AppendOutbox(ctx, store.OutboxEntry{Kind: "Cluster", ResourceID: "c9", Generation: 1, Reason: store.OutboxCreated, CreatedTime: now})
			return errors.New("roll back")
		})
		got, err := s.PendingOutbox(ctx, 10)
		if err != nil || len(got) != 3 || got[0].Generation != 1 || got[2].Generation != 3 {
			t.Fatalf("pending = %+v, %v", got, err)
		}
		if err := s.AckOutbox(ctx, got[0].ID, got[1].ID); err != nil {
			t.Fatal(err)
		}
		got, _ = s.PendingOutbox(ctx, 10)
		if len(got) != 1 || got[0].Generation != 3 || got[0].ResourceID != "c1" || got[0].Reason != store.OutboxUpdated || got[0].TraceParent != traceParent {
			t.Errorf("after ack = %+v", got)
		}
	})
}

const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// OnCommit runs once the transaction has committed, before InTx returns:
// another connection already reads what it wrote. A transaction that
// rolls back never runs it.
func TestOnCommitRunsAtTheCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		var ran []string
		err := s.InTx(ctx, func(tx store.Tx) error {
			tx.OnCommit(func() {
				_, err := s.GetResource(ctx, resource.KindCluster, "c1")
				ran = append(ran, fmt.Sprintf("read after the commit: %v", err))
			})
			return tx.CreateResource(ctx, cluster("c1", "one"))
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"read after the commit: <nil>"}; !slices.Equal(ran, want) {
			t.Errorf("OnCommit ran %q, want %q", ran, want)
		}

		ran = nil
		_ = s.InTx(ctx, func(tx store.Tx) error {
			tx.OnCommit(func() { ran = append(ran, "rolled back") })
			if err := tx.CreateResource(ctx, cluster("c2", "two")); err != nil {
				return err
			}
			return errors.New("roll back")
		})
		if len(ran) != 0 {
			t.Errorf("OnCommit ran after a rollback: %q", ran)
		}
	})
}

// Two API replicas draining one PostgreSQL outbox split it: rows one holds
// are invisible to the other until it returns; rows it did not deliver
// stay for the next pass. SQLite serves one process and only reads.
func TestClaimOutboxSplitsBetweenReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		err := s.InTx(ctx, func(tx store.Tx) error {
			for i := 1; i <= 4; i++ {
				e := store.OutboxEntry{Kind: "Cluster", ResourceID: fmt.Sprintf("c%d", i), Generation: 1,
					Reason: store.OutboxCreated, CreatedTime: time.Now()}
				if err := tx.AppendOutbox(ctx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var first, second []store.OutboxEntry
		n, err := s.ClaimOutbox(ctx, 2, func(ctx context.Context, rows []store.OutboxEntry) []int64 {
			first = rows
			// The other replica's pass, while this one holds its rows.
			if _, err := s.ClaimOutbox(ctx, 10, func(_ context.Context, rows []store.OutboxEntry) []int64 {
				second = rows
				ids := make([]int64, 0, len(rows))
				for _, r := range rows {
					ids = append(ids, r.ID)
				}
				return ids
			}); err != nil {
				t.Errorf("second claim: %v", err)
			}
			return []int64{rows[0].ID} // the other row failed
		})
		if err != nil || n != 2 || len(first) != 2 || first[0].ResourceID != "c1" || first[1].ResourceID != "c2" {
			t.Fatalf("first claim = %d rows %+v, %v; want c1 and c2", n, first, err)
		}
		left, err := s.PendingOutbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if s.Backend() == store.BackendPostgres {
			if len(second) != 2 || second[0].ResourceID != "c3" || second[1].ResourceID != "c4" {
				t.Errorf("the second replica saw %+v, want only c3 and c4 (c1 and c2 are held)", second)
			}
			if len(left) != 1 || left[0].ResourceID != "c2" {
				t.Errorf("left after both passes = %+v, want c2 (not delivered)", left)
			}
			return
		}
		// SQLite: the nested pass saw and removed every row.
		if len(second) != 4 || len(left) != 0 {
			t.Errorf("SQLite: second pass saw %d rows, %d left; want 4 and 0", len(second), len(left))
		}
	})
}

// A database at schema version 2 (before outbox rows kept a traceparent)
// upgrades in place: its pending rows survive with an empty traceparent and
// new rows keep theirs.
func TestMigrateOutboxTraceParentInPlace(t *testing.T) {
	atVersion(t, 2, func(t *testing.T, ctx context.Context, s store.Store) {
		// An older binary's row: written without the column.
		q := "INSERT INTO outbox (kind, resource_id, parent_id, generation, reason, created_time) VALUES ('Cluster', 'old', '', 1, 'created', $1)"
		if s.Backend() == store.BackendSQLite {
			q = strings.Replace(q, "$1", "?", 1)
		}
		if _, err := s.SQLDB().ExecContext(ctx, q, now); err != nil {
			t.Fatalf("write a version 2 outbox row: %v", err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("upgrade to version %d: %v", store.SchemaVersion(), err)
		}
		err := s.InTx(ctx, func(tx store.Tx) error {
			return tx.AppendOutbox(ctx, store.OutboxEntry{Kind: "Cluster", ResourceID: "new", Generation: 1, Reason: store.OutboxCreated, CreatedTime: now, TraceParent: traceParent})
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.PendingOutbox(ctx, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("pending after upgrade = %+v, %v", got, err)
		}
		if got[0].ResourceID != "old" || got[0].TraceParent != "" {
			t.Errorf("the version 2 row after the upgrade = %+v, want it kept without a traceparent", got[0])
		}
		if got[1].ResourceID != "new" || got[1].TraceParent != traceParent {
			t.Errorf("a new row = %+v, want traceparent %s", got[1], traceParent)
		}
	})
}

// Row locks serialise read-modify-write: 20 concurrent increments of the
// generation must all land.
func TestLockResourceSerialises(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		create(t, s, cluster("c1", "alpha"))
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.InTx(ctx, func(tx store.Tx) error {
					r, err := tx.LockResource(ctx, resource.KindCluster, "c1")
					if err != nil {
						return err
					}
					r.Generation++
					return tx.UpdateResource(ctx, r)
				})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		r, _ := s.GetResource(ctx, resource.KindCluster, "c1")
		if r.Generation != 21 {
			t.Errorf("generation = %d after 20 concurrent increments, want 21", r.Generation)
		}
	})
}

func TestSettingsAndMigrateTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		if _, ok, err := s.GetSetting(ctx, "k"); ok || err != nil {
			t.Fatalf("missing setting: %v %v", ok, err)
		}
		_ = s.PutSetting(ctx, "k", "1")
		_ = s.PutSetting(ctx, "k", "2")
		if v, ok, err := s.GetSetting(ctx, "k"); v != "2" || !ok || err != nil {
			t.Errorf("setting = %q %v %v", v, ok, err)
		}
	})
}

func TestLiveResourcesPages(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		create(t, s, cluster("c1", "a1"), cluster("c2", "a2"), cluster("c3", "a3"), nodePool("n1", "c1", "p1"))
		first, _ := s.LiveResources(ctx, resource.KindCluster, "", 2)
		second, _ := s.LiveResources(ctx, resource.KindCluster, first[len(first)-1].ID, 2)
		if len(first) != 2 || len(second) != 1 || second[0].ID != "c3" {
			t.Errorf("pages = %v / %v", first, second)
		}
	})
}

func TestOpenErrorsNameTheProblem(t *testing.T) {
	for _, cfg := range []store.Config{
		{Driver: "mysql", URL: "x"},
		{Driver: store.BackendPostgres},
		{Driver: store.BackendSQLite},
	} {
		_, err := store.Open(context.Background(), cfg)
		if err == nil {
			t.Errorf("Open(%+v) succeeded", cfg)
		}
	}
}

// A whole kind's total comes from counts that triggers keep (schema
// version 5): filled from the rows an older version stored, then kept
// exact through inserts, deletes and the deletes a cluster's removal
// cascades to its node pools.
func TestResourceCountsKeptWithRows(t *testing.T) {
	atVersion(t, 4, func(t *testing.T, ctx context.Context, s store.Store) {
		for i := range 5 {
			c := fmt.Sprintf("c%d", i)
			createBeforeV6(t, s, cluster(c, "cluster-"+c), nodePool(c+"-a", c, "a"), nodePool(c+"-b", c, "b"), nodePool(c+"-c", c, "c"))
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("upgrade to version %d: %v", store.SchemaVersion(), err)
		}
		check := func(step string, clusters, nodePools int64) {
			t.Helper()
			for kind, want := range map[string]int64{resource.KindCluster: clusters, resource.KindNodePool: nodePools, "": clusters + nodePools} {
				kept, err := s.ListResources(ctx, store.ListQuery{Kind: kind, Limit: 1})
				if err != nil {
					t.Fatal(err)
				}
				// A search always counts the rows: the reference.
				counted, err := s.ListResources(ctx, store.ListQuery{Kind: kind, Where: search.Where{SQL: "1 = 1"}, Limit: 1})
				if err != nil {
					t.Fatal(err)
				}
				if kept.Total != want || counted.Total != want {
					t.Errorf("%s: %q total %d kept, %d counted, want %d", step, kind, kept.Total, counted.Total, want)
				}
			}
		}
		check("after the upgrade", 5, 15)
		create(t, s, cluster("c9", "late"), nodePool("c9-a", "c9", "a"))
		check("after creates", 6, 16)
		for _, id := range []string{"c0", "c1-a"} {
			if err := s.InTx(ctx, func(tx store.Tx) error { return tx.RemoveResource(ctx, id) }); err != nil {
				t.Fatal(err)
			}
		}
		check("after a cluster's removal (cascading to 3 node pools) and a node pool's", 5, 12)
		// A rolled back insert leaves the count alone.
		_ = s.InTx(ctx, func(tx store.Tx) error {
			_ = tx.CreateResource(ctx, cluster("c8", "rolled-back"))
			return errors.New("roll back")
		})
		check("after a rolled back create", 5, 12)
	})
}

// Counts kept by the id's hash (versions 5-14) stay exact through
// version 15, which counts on the writer's connection instead: rows
// counted the old way and removed the new way, and creates on many
// connections at once, leave the total equal to the rows.
func TestResourceCountsSurviveVersion15(t *testing.T) {
	atVersion(t, 14, func(t *testing.T, ctx context.Context, s store.Store) {
		for i := range 8 {
			create(t, s, cluster(fmt.Sprintf("old%d", i), fmt.Sprintf("old-%d", i)))
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("upgrade to version %d: %v", store.SchemaVersion(), err)
		}
		total := func(step string, want int64) {
			t.Helper()
			kept, err := s.ListResources(ctx, store.ListQuery{Kind: resource.KindCluster, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if kept.Total != want {
				t.Errorf("%s: total %d, want %d", step, kept.Total, want)
			}
		}
		total("after the upgrade", 8)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					id := fmt.Sprintf("new%d-%d", w, i)
					if err := s.InTx(ctx, func(tx store.Tx) error { return tx.CreateResource(ctx, cluster(id, id)) }); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		total("after 80 concurrent creates", 88)
		for i := range 8 {
			id := fmt.Sprintf("old%d", i)
			if err := s.InTx(ctx, func(tx store.Tx) error { return tx.RemoveResource(ctx, id) }); err != nil {
				t.Fatal(err)
			}
		}
		total("after removing every row counted before the upgrade", 80)
	})
}

// On SQLite, connections open while the server migrated a new file stay
// slow (status reports at about 60% of their rate, docs/benchmarks.md):
// applying migrations closes the idle ones, and a start with nothing to
// apply leaves the pool alone.
func TestSQLiteReopensConnectionsAfterMigrating(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hyperfleet.db"), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Hold a few connections idle, as a pool serving requests would.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		if conns[i], err = s.SQLDB().Conn(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	closed := s.SQLDB().Stats().MaxIdleClosed
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.SQLDB().Stats().MaxIdleClosed; got < closed+3 {
		t.Errorf("after migrating a new file, %d idle connections were closed; want the 3 that were open", got-closed)
	}
	closed = s.SQLDB().Stats().MaxIdleClosed
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.SQLDB().Stats().MaxIdleClosed; got != closed {
		t.Errorf("a start with nothing to migrate closed %d connections", got-closed)
	}
}

// After Warm a PostgreSQL pool holds its idle connections, each with a
// backend of its own, before the first request; SQLite's stay lazy.
func TestWarmOpensIdleConnections(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range configs(t) {
		t.Run(cfg.Driver, func(t *testing.T) {
			cfg.MaxOpenConns = 6
			cfg.Logger = zerolog.Nop()
			s, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			before := s.SQLDB().Stats().OpenConnections
			if err := s.Warm(ctx); err != nil {
				t.Fatalf("warm: %v", err)
			}
			st := s.SQLDB().Stats()
			want := before
			if cfg.Driver == store.BackendPostgres {
				want = 6
				var backends int
				if err := s.SQLDB().QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()").Scan(&backends); err != nil {
					t.Fatal(err)
				}
				// The counting connection is one of the pool's six.
				if backends != 5 {
					t.Errorf("%d other backends on the database after Warm, want 5", backends)
				}
			}
			if st.OpenConnections != want || st.Idle != want {
				t.Errorf("after Warm: %d open, %d idle; want %d of each (before: %d open)", st.OpenConnections, st.Idle, want, before)
			}
		})
	}
}
