//go:build integration

// Tests of what only PostgreSQL does (connection pools of server backends,
// generic plans); the suites that run on every backend are in the other
// files and run on SQLite alone without the integration tag.
package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
)

// More idle connections configured than the pool may open: Warm opens
// what it may and returns, rather than holding them while it waits for
// the rest.
func TestWarmWithIdleAboveOpen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Config{Driver: store.BackendPostgres, URL: testenv.PostgresDB(t),
		MaxOpenConns: 2, MaxIdleConns: 5, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Warm(ctx); err != nil {
		t.Fatalf("warm: %v", err)
	}
	if st := s.SQLDB().Stats(); st.OpenConnections != 2 || st.Idle != 2 {
		t.Errorf("after Warm: %d open, %d idle; want 2 of each", st.OpenConnections, st.Idle)
	}
}

// TestTermPageKeepsOnePlan: on PostgreSQL a term plan's first page may be
// planned once, as a generic plan, instead of on every run, so that plan
// must be the walk whatever the statistics say: the first term's index in
// order, a probe per walked row, no sort and no hash join. Statistics that
// say terms are many and rare (a label unique to each cluster) made the
// plain semi-join a hash join of both terms' holders and a sort, 48 ms
// against 0.4 ms for a page at 100,000 clusters. (Pages after a position
// keep a plan per run: their generic plan, with the position a parameter,
// sorts; termPageSQL.)
func TestTermPageKeepsOnePlan(t *testing.T) {
	// SQLite plans a statement once, when it is prepared.
	s := backends(t)[store.BackendPostgres]
	ctx := context.Background()
	indexFixture(t, s, 50)
	pgBulkFixture(t, s)
	for _, stats := range []string{"as measured", "many rare terms"} {
		if stats == "many rare terms" {
			for _, stmt := range []string{"ALTER TABLE resource_terms ALTER COLUMN term SET (n_distinct = 200000)", "ANALYZE resource_terms"} {
				if _, err := s.SQLDB().ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
		}
		for _, query := range []string{
			"labels.shard = '3' and status.conditions.Ready = 'True'",
			"status.conditions.Ready = 'False' and labels.shard = 's7' and labels['cost-center'] = 'c7'",
			"labels.shard = '3' and status.conditions.Ready = 'True' and spec.nodes = 3",
			"status.conditions.Ready = 'False'",
		} {
			w, err := search.Translate(query, s.Dialect(), search.Options{Table: "resources", Indexed: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, order := range [][]search.OrderTerm{nil, {{Column: "created_time"}}} {
				plan, err := store.GenericPagePlan(ctx, s, store.ListQuery{Kind: resource.KindCluster, Where: w, Order: order, Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				walks := strings.Contains(plan, "using resource_terms_term on resource_terms d")
				if !walks || strings.Contains(plan, "Sort") || strings.Contains(plan, "Hash") || strings.Contains(plan, "Seq Scan") {
					t.Errorf("statistics %s, %s (order %v): the generic plan is not the walk of the first term's index:\n%s", stats, query, order, plan)
				}
			}
		}
	}
}
