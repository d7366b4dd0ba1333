package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// ExplainList returns the query plans of a list query's count and page,
// one line per plan node, as the backend prints them.
func ExplainList(ctx context.Context, st Store, q ListQuery) (count, page string, err error) {
	s := st.(*gormStore)
	order := search.WithTieBreak(q.Order)
	if p := termPlan(q, order); p != nil {
		query, args := termCountSQL(q.Kind, p)
		if count, err = s.explain(ctx, s.db.Dialector.Explain(s.stmts.rebind(query), args...)); err != nil {
			return "", "", err
		}
		query, args = termPageSQL(s.backend, q, order, p)
		page, err = s.explain(ctx, s.db.Dialector.Explain(s.stmts.rebind(query), args...))
		return count, page, err
	}
	countSQL := s.db.ToSQL(func(tx *gorm.DB) *gorm.DB {
		var n int64
		return listFilter(tx.WithContext(ctx), q).Count(&n)
	})
	var pageSQL string
	if countsMatches(q) {
		pageSQL = s.db.ToSQL(func(tx *gorm.DB) *gorm.DB {
			var rows []resourceRow
			db, err := pageQuery(tx.WithContext(ctx), q, order)
			if err != nil {
				return tx.Where("1 = 0").Find(&rows)
			}
			return db.Find(&rows)
		})
	} else {
		query, args, err := plainPageSQL(q, order)
		if err != nil {
			return "", "", err
		}
		pageSQL = s.db.Dialector.Explain(s.stmts.rebind(query), args...)
	}
	if count, err = s.explain(ctx, countSQL); err != nil {
		return "", "", err
	}
	page, err = s.explain(ctx, pageSQL)
	return count, page, err
}

func (s *gormStore) explain(ctx context.Context, query string) (string, error) {
	conn, err := s.sqlDB.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	prefix := "EXPLAIN QUERY PLAN "
	if s.backend == BackendPostgres {
		// A test table is small enough that a sequential scan is cheapest
		// whatever the indexes; priced out, it remains only where no index
		// serves the query, which is what the tests look for.
		prefix = "EXPLAIN "
		if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
			return "", err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "RESET enable_seqscan") //nolint:errcheck
	}
	rows, err := conn.QueryContext(ctx, prefix+query)
	return planText(query, rows, err)
}

// planText joins the last column of each row of an EXPLAIN, a plan node a
// line.
func planText(query string, rows *sql.Rows, err error) (string, error) {
	if err != nil {
		return "", fmt.Errorf("explain %s: %w", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	return strings.Join(lines, "\n"), rows.Err()
}

// GenericPagePlan is PostgreSQL's generic plan of a term-plan list's page
// statement: the plan a prepared statement keeps for every parameter once
// PostgreSQL estimates it costs no more than planning each run.
func GenericPagePlan(ctx context.Context, st Store, q ListQuery) (string, error) {
	s := st.(*gormStore)
	order := search.WithTieBreak(q.Order)
	p := termPlan(q, order)
	if p == nil {
		return "", fmt.Errorf("no term plan")
	}
	query, args := termPageSQL(s.backend, q, order, p)
	conn, err := s.sqlDB.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	for _, stmt := range []string{"SET plan_cache_mode = force_generic_plan", "PREPARE hf_page AS " + s.stmts.rebind(query)} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return "", fmt.Errorf("%s: %w", stmt, err)
		}
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DEALLOCATE hf_page; RESET plan_cache_mode") //nolint:errcheck
	execute := "EXECUTE hf_page"
	if len(args) > 0 {
		execute += "(" + strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ") + ")"
	}
	rows, err := conn.QueryContext(ctx, "EXPLAIN "+s.db.Dialector.Explain(s.stmts.rebind(execute), args...))
	return planText(query, rows, err)
}

// MigrateTo applies the migrations up to version only, as an older binary
// would have left the database.
func MigrateTo(ctx context.Context, st Store, version int) error {
	saved := migrations
	defer func() { migrations = saved }()
	migrations = nil
	for _, m := range saved {
		if m.version <= version {
			migrations = append(migrations, m)
		}
	}
	return st.Migrate(ctx)
}

// CachedCounts is how many search totals a SQLite store keeps (see
// countCache).
func CachedCounts(st Store) int {
	c := &st.(*gormStore).counts
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// CreateBeforeV6 stores resources as a binary before schema version 6
// did (no condition_terms column), for tests that build an old database.
func CreateBeforeV6(ctx context.Context, st Store, rs ...*resource.Resource) error {
	return st.(*gormStore).db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, r := range rs {
			row, err := toRow(r)
			if err != nil {
				return err
			}
			if err := tx.Omit("ConditionTerms").Create(&row).Error; err != nil {
				return fmt.Errorf("insert %s %s: %w", r.Kind, r.Name, err)
			}
		}
		return nil
	})
}

// TermCounts returns, per "term kind", how many resources the kept counts
// say hold the term (term_stats on SQLite; term_counts plus the appended
// deltas on PostgreSQL) and how many resource_terms rows hold it, leaving
// out terms both put at 0.
func TermCounts(ctx context.Context, st Store) (kept, exact map[string]int64, err error) {
	s := st.(*gormStore)
	keptSQL := "SELECT term, kind, n FROM term_stats"
	if s.backend == BackendPostgres {
		keptSQL = `SELECT term, kind, sum(n)::bigint FROM (SELECT term, kind, n FROM term_counts UNION ALL SELECT term, kind, n FROM term_deltas) AS c GROUP BY term, kind`
	}
	read := func(query string) (map[string]int64, error) {
		rows, err := s.sqlDB.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var term, kind string
			var n int64
			if err := rows.Scan(&term, &kind, &n); err != nil {
				return nil, err
			}
			if n != 0 {
				out[term+" "+kind] = n
			}
		}
		return out, rows.Err()
	}
	if kept, err = read(keptSQL); err != nil {
		return nil, nil, fmt.Errorf("kept term counts: %w", err)
	}
	if exact, err = read("SELECT term, kind, count(*) FROM resource_terms GROUP BY term, kind"); err != nil {
		return nil, nil, fmt.Errorf("term rows: %w", err)
	}
	return kept, exact, nil
}

// MaxSpecWalk and SetMaxSpecWalk read and set a store's walk bound past
// which a PostgreSQL term plan's page with a spec residual is read by its
// SQL form; SetMaxSpecWalk returns the function that restores it. Set it
// only while nothing else uses the store.
func MaxSpecWalk(st Store) int64 { return st.(*gormStore).maxSpecWalk }

func SetMaxSpecWalk(st Store, n int64) (restore func()) {
	s := st.(*gormStore)
	old := s.maxSpecWalk
	s.maxSpecWalk = n
	return func() { s.maxSpecWalk = old }
}
