// Kept term counts on PostgreSQL (schema version 8): writers append
// changes to term_deltas; compactTermCounts folds them into term_counts.

package store

import (
	"context"
	"fmt"
)

// termCountsLockID keeps one API replica compacting at a time ("hfterms"
// in ASCII): two compactions would take term_counts rows in different
// orders.
const termCountsLockID = 0x68667465726d73

// compactTermCountsSQL moves every delta it sees into its term's count,
// and moves the version of each term it changed. A delta committed after
// the statement's snapshot is not seen, so not deleted, and waits for the
// next compaction; readers see the deltas or the counts they became,
// never both or neither (one transaction).
const compactTermCountsSQL = `WITH moved AS (DELETE FROM term_deltas RETURNING term, kind, n)
INSERT INTO term_counts (term, kind, n, version)
SELECT term, kind, sum(n), 1 FROM moved GROUP BY term, kind
ON CONFLICT (term, kind) DO UPDATE SET n = term_counts.n + excluded.n, version = term_counts.version + 1`

// CompactTermCounts folds the appended term-count changes into the
// counts and returns how many terms it changed. Readers are exact either
// way; compaction keeps their reads short. Nothing to do on SQLite, whose
// single writer updates term_stats in place.
func (s *gormStore) CompactTermCounts(ctx context.Context) (int64, error) {
	if s.backend != BackendPostgres {
		return 0, nil
	}
	var pending bool
	if err := s.sqlDB.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM term_deltas)").Scan(&pending); err != nil {
		return 0, fmt.Errorf("compact term counts: %w", err)
	}
	if !pending {
		return 0, nil
	}
	tx, err := s.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("compact term counts: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var mine bool
	if err := tx.QueryRowContext(ctx, "SELECT pg_try_advisory_xact_lock($1)", int64(termCountsLockID)).Scan(&mine); err != nil {
		return 0, fmt.Errorf("compact term counts: %w", err)
	}
	if !mine {
		return 0, nil // another replica is at it
	}
	res, err := tx.ExecContext(ctx, compactTermCountsSQL)
	if err != nil {
		return 0, fmt.Errorf("compact term counts: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("compact term counts: %w", err)
	}
	return res.RowsAffected()
}
