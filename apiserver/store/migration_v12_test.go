package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// A database at schema version 11 (on PostgreSQL, spec and report
// documents in jsonb) upgrades in place: the rows keep their values and
// are found by the same searches, through the spec index, and what is
// written afterwards reads back as sent.
func TestMigrateDocumentsToTextInPlace(t *testing.T) {
	const oldID, spec = "00000000-0000-4000-8000-100000000000", `{"platform":{"type":"gcp"},"n":1E+2,"tiny":-5e-324,"big":123456789012345678901234567890}`
	const data, metadata = `{"took":1E+2,"ratio":0.1e-7}`, `{"v":1.0}`
	// The fixture's clusters each query finds (indexFixture's pattern);
	// the new binary cannot search a version 11 database on PostgreSQL
	// (its spec_jsonb is not there yet), so they are written out.
	fixture := func(match func(i int) bool, extra ...string) []string {
		ids := extra
		for i := range 24 {
			if match(i) {
				ids = append(ids, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
			}
		}
		slices.Sort(ids)
		return ids
	}
	want := map[string][]string{
		"spec.platform.type = 'gcp'": fixture(func(i int) bool { return i%2 == 0 }, oldID),
		"spec.nodes = 3":             fixture(func(i int) bool { return i%7 == 3 }),
		"spec.n = 100":               fixture(func(int) bool { return false }, oldID),
		"spec.tiny < 0":              fixture(func(int) bool { return false }, oldID),
		"spec.enabled = true and labels.shard = '1'": fixture(func(i int) bool { return i%3 == 0 && i%5 == 1 }),
	}
	atVersion(t, 11, func(t *testing.T, ctx context.Context, s store.Store) {
		indexFixture(t, s, 24)
		old := cluster(oldID, "numbers")
		old.Spec = json.RawMessage(spec)
		create(t, s, old)
		st := resource.AdapterStatus{Adapter: "a", ObservedGeneration: 1, ObservedTime: now, CreatedTime: now, LastReportTime: now,
			Conditions: []resource.AdapterCondition{{Type: "Available", Status: "True", LastTransitionTime: now}},
			Data:       json.RawMessage(data), Metadata: json.RawMessage(metadata)}
		if err := s.InTx(ctx, func(tx store.Tx) error { return tx.PutStatus(ctx, oldID, st) }); err != nil {
			t.Fatal(err)
		}
		if s.Backend() == store.BackendPostgres {
			// A populated database: 20,000 more clusters, each with a
			// report, none matching the queries above.
			pgBulkFixture(t, s)
			_, err := s.SQLDB().ExecContext(ctx, `INSERT INTO adapter_statuses
				(resource_id, adapter, observed_generation, observed_time, conditions, data, created_time, last_report_time)
				SELECT id, 'a', 1, now(), '[{"type":"Available","status":"True","last_transition_time":"2025-03-04T05:06:07Z"}]',
					jsonb_build_object('took', 1e-7), now(), now() FROM resources WHERE id LIKE 'bulk-%'`)
			if err != nil {
				t.Fatalf("bulk reports: %v", err)
			}
		}
		start := time.Now()
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("upgrade to version %d: %v", store.SchemaVersion(), err)
		}
		t.Logf("%s: the upgrade took %v", s.Backend(), time.Since(start))
		got, err := s.GetResource(ctx, resource.KindCluster, oldID)
		if err != nil {
			t.Fatal(err)
		}
		// PostgreSQL's rows keep jsonb's rendering: the values sent.
		if !lifecycle.SameJSON(got.Spec, json.RawMessage(spec)) || s.Backend() == store.BackendSQLite && string(got.Spec) != spec {
			t.Errorf("spec after the upgrade = %s, want the values of %s", got.Spec, spec)
		}
		sts, _, err := s.ListStatuses(ctx, oldID, 0, 10)
		if err != nil || len(sts) != 1 {
			t.Fatalf("statuses after the upgrade = %+v, %v", sts, err)
		}
		if !lifecycle.SameJSON(sts[0].Data, json.RawMessage(data)) || !lifecycle.SameJSON(sts[0].Metadata, json.RawMessage(metadata)) ||
			sts[0].Conditions[0].Type != "Available" {
			t.Errorf("status after the upgrade: data %s, metadata %s, conditions %+v", sts[0].Data, sts[0].Metadata, sts[0].Conditions)
		}
		for q, ids := range want {
			indexed, _ := listIDs(t, s, q, true)
			exact, _ := listIDs(t, s, q, false)
			slices.Sort(indexed)
			slices.Sort(exact)
			if !slices.Equal(indexed, ids) || !slices.Equal(exact, ids) {
				t.Errorf("%s after the upgrade: %v indexed, %v exact; want %v", q, indexed, exact, ids)
			}
		}
		if s.Backend() == store.BackendPostgres {
			w, err := search.Translate("spec.platform.type = 'gcp'", s.Dialect(), search.Options{Table: "resources", Indexed: true})
			if err != nil {
				t.Fatal(err)
			}
			count, page, err := store.ExplainList(ctx, s, store.ListQuery{Kind: resource.KindCluster, Where: w, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			for what, plan := range map[string]string{"count": count, "page": page} {
				if scan := fullScan(s.Backend(), plan); scan != "" || !strings.Contains(plan, "resources_spec") {
					t.Errorf("the %s of a spec search after the upgrade does not use resources_spec; plan:\n%s", what, plan)
				}
			}
		}

		// Written after the upgrade: kept as sent on both backends.
		got.Spec = json.RawMessage(`{"platform":{"type":"gcp"},"n":1E+2,"tiny":-5e-324}`)
		got.Generation++
		st.Data = json.RawMessage(`{"took":2E+2}`)
		err = s.InTx(ctx, func(tx store.Tx) error {
			if err := tx.UpdateResource(ctx, got); err != nil {
				return err
			}
			return tx.PutStatus(ctx, oldID, st)
		})
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.GetResource(ctx, resource.KindCluster, oldID)
		if err != nil || string(again.Spec) != string(got.Spec) {
			t.Errorf("spec written after the upgrade = %s (%v), want %s", again.Spec, err, got.Spec)
		}
		sts, _, err = s.ListStatuses(ctx, oldID, 0, 10)
		if err != nil || len(sts) != 1 || string(sts[0].Data) != `{"took":2E+2}` {
			t.Errorf("status data written after the upgrade = %+v, %v", sts, err)
		}
		if ids, _ := listIDs(t, s, "spec.n = 100 and spec.platform.type = 'gcp'", true); !slices.Equal(ids, []string{oldID}) {
			t.Errorf("spec.n = 100 after a write finds %v, want %s", ids, oldID)
		}
	})
}
