//go:build integration

package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/await"
)

// TestTermCountsCompactedByTheAPI: on PostgreSQL every create appends
// term-count changes (schema version 8); the running API folds them into
// the kept counts within seconds, and a search's total is the same before
// and after.
func TestTermCountsCompactedByTheAPI(t *testing.T) {
	e := newEnv(t, store.BackendPostgres)
	for i := range 5 {
		e.createCluster(fmt.Sprintf("compact-%d", i))
	}
	q := "/clusters?search=" + url.QueryEscape("status.conditions.Ready='False'")
	var before, after struct {
		Total int `json:"total"`
	}
	e.do(http.MethodGet, base+q, nil).expect(http.StatusOK).into(&before)
	if before.Total != 5 {
		t.Fatalf("total %d before compaction, want 5", before.Total)
	}
	db := e.app.Store.SQLDB()
	var identity string
	if err := db.QueryRow("SELECT relreplident::text FROM pg_class WHERE relname = 'term_deltas'").Scan(&identity); err != nil || identity != "f" {
		t.Errorf("term_deltas replica identity %q (%v), want f (full): logical replication would refuse the compaction's deletes", identity, err)
	}
	await.Eventually(t, 30*time.Second, "term-count changes folded", func() (bool, string) {
		var pending int
		if err := db.QueryRow("SELECT count(*) FROM term_deltas").Scan(&pending); err != nil {
			t.Fatal(err)
		}
		var kept int
		if err := db.QueryRow("SELECT count(*) FROM term_counts WHERE term = 'c:Ready=False' AND n = 5").Scan(&kept); err != nil {
			t.Fatal(err)
		}
		return pending == 0 && kept == 1, fmt.Sprintf("%d term-count changes not folded (c:Ready=False kept at 5: %v)", pending, kept == 1)
	})
	e.do(http.MethodGet, base+q, nil).expect(http.StatusOK).into(&after)
	if after.Total != before.Total {
		t.Errorf("total %d after compaction, %d before", after.Total, before.Total)
	}
	// The counter moves just after the compaction commits.
	await.Eventually(t, 10*time.Second, "/metrics to count a folding compaction", func() (bool, string) {
		metrics := string(e.do(http.MethodGet, "/metrics", nil).expect(http.StatusOK).body)
		return strings.Contains(metrics, `hyperfleet_api_term_compactions_total{outcome="folded"}`), grepLines(metrics, "hyperfleet_api_term_compactions_total")
	})
}
