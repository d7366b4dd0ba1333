// Prepared statements: the hottest single-row read, a plain list's page
// and the resource update skip gorm and keep their statements prepared.
// Profiling GET by id on SQLite showed a fifth of the request's CPU in
// SQLite's parser (the pure-Go driver has no statement cache) and another
// tenth in gorm's reflection-based scan; an UPDATE of resources also
// compiles the search index triggers (schema version 3) each time it is
// prepared.

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// resourceColumns is what every resource read selects (in scanResource's
// order), never "*": on PostgreSQL that would also read spec_jsonb,
// rendered in jsonb's plain decimal (schema version 12).
const resourceColumns = "id, kind, parent_id, name, generation, spec, labels, conditions, refs, " +
	"created_time, updated_time, deleted_time, created_by, updated_by, deleted_by, tenant"

const (
	insertResourceSQL = "INSERT INTO resources (id, kind, parent_id, name, generation, spec, labels, conditions, condition_terms, refs, " +
		"created_time, updated_time, deleted_time, created_by, updated_by, deleted_by, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	updateResourceSQL = "UPDATE resources SET generation = ?, spec = ?, labels = ?, conditions = ?, condition_terms = ?, refs = ?, " +
		"updated_time = ?, updated_by = ?, deleted_time = ?, deleted_by = ? WHERE id = ?"
	updateStateSQL = "UPDATE resources SET generation = ?, conditions = ?, condition_terms = ?, " +
		"updated_time = ?, updated_by = ?, deleted_time = ?, deleted_by = ? WHERE id = ?"
	getResourceSQL       = "SELECT " + resourceColumns + " FROM resources WHERE id = ?"
	getResourceOfKindSQL = "SELECT " + resourceColumns + " FROM resources WHERE id = ? AND kind = ?"
	// A tenant's reads: another tenancy's row is not returned, so it is
	// missing as a random id is (scopeOf).
	getScopedResourceSQL       = getResourceSQL + " AND " + tenantFilter
	getScopedResourceOfKindSQL = getResourceOfKindSQL + " AND " + tenantFilter
	countKindSQL               = "SELECT COALESCE(SUM(n), 0) FROM resource_counts WHERE kind = ?"
	countAllSQL                = "SELECT COALESCE(SUM(n), 0) FROM resource_counts"
)

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// scanResource reads resourceColumns into row, then any extra columns.
func scanResource(sc rowScanner, row *resourceRow, extra ...any) error {
	dest := append([]any{&row.ID, &row.Kind, &row.ParentID, &row.Name, &row.Generation, &row.Spec, &row.Labels,
		&row.Conditions, &row.Refs, &row.CreatedTime, &row.UpdatedTime, &row.DeletedTime,
		&row.CreatedBy, &row.UpdatedBy, &row.DeletedBy, &row.Tenant}, extra...)
	return sc.Scan(dest...)
}

// statements prepares each statement once per pool; database/sql
// re-prepares it on each connection it runs on, including ones opened
// after a database restart. A failed prepare is not kept, so the next
// call tries again.
type statements struct {
	db      *sql.DB
	rebind  func(string) string
	mu      sync.Mutex
	byQuery map[string]*sql.Stmt
	// preparing holds the queries being prepared in the background, so a
	// burst before the first prepare finishes starts one, not one each.
	preparing map[string]bool
	closed    bool
}

// prepareInBackground prepares the query for the pool unless it is
// prepared or being prepared already.
func (s *statements) prepareInBackground(ctx context.Context, query string) {
	s.mu.Lock()
	if s.byQuery[query] != nil || s.preparing[query] || s.closed {
		s.mu.Unlock()
		return
	}
	if s.preparing == nil {
		s.preparing = map[string]bool{}
	}
	s.preparing[query] = true
	s.mu.Unlock()
	go func() {
		_, _ = s.get(ctx, query) // a failure is retried on the next call
		s.mu.Lock()
		delete(s.preparing, query)
		s.mu.Unlock()
	}()
}

func (s *statements) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := s.prepared(query); st != nil {
		return st, nil
	}
	// Not under the lock: preparing waits for a free connection, and
	// prepared must never wait behind that.
	st, err := s.db.PrepareContext(ctx, s.rebind(query))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		st.Close()
		return nil, errors.New("store: closed")
	}
	if have, ok := s.byQuery[query]; ok {
		st.Close()
		return have, nil
	}
	if s.byQuery == nil {
		s.byQuery = map[string]*sql.Stmt{}
	}
	s.byQuery[query] = st
	return st, nil
}

// prepared returns the statement if it is already prepared, else nil.
func (s *statements) prepared(query string) *sql.Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byQuery[query]
}

// count is the number of statements kept prepared.
func (s *statements) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byQuery)
}

func (s *statements) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.byQuery {
		st.Close()
	}
	s.byQuery = nil
	s.closed = true
}

// postgresPlaceholders rewrites ? placeholders as $1, $2... (the
// statements here hold no literal question marks).
func postgresPlaceholders(query string) string {
	out := make([]byte, 0, len(query)+8)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			out = fmt.Appendf(out, "$%d", n)
			continue
		}
		out = append(out, query[i])
	}
	return string(out)
}

// queryRow runs a prepared single-row read into dst, logging it like
// every gorm statement (failures, slow ones).
func (s *gormStore) queryRow(ctx context.Context, query string, scan func(rowScanner) error, args ...any) error {
	begin := time.Now()
	st, err := s.stmts.get(ctx, query)
	if err == nil {
		err = scan(st.QueryRowContext(ctx, args...))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	s.qlog.Trace(ctx, begin, func() (string, int64) { return query, 1 }, err)
	return err
}

// maxPrepared bounds the statements kept prepared: a list's statement
// varies with the order its caller asks for, so they are not a fixed set.
const maxPrepared = 64

// query runs a read of many rows, prepared unless maxPrepared statements
// are kept already (then as a one-off). The caller closes the rows.
func (s *gormStore) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	begin := time.Now()
	st := s.stmts.prepared(query)
	var err error
	if st == nil && s.stmts.count() < maxPrepared {
		st, err = s.stmts.get(ctx, query)
	}
	var rows *sql.Rows
	switch {
	case err != nil:
	case st != nil:
		rows, err = st.QueryContext(ctx, args...)
	default:
		rows, err = s.sqlDB.QueryContext(ctx, s.stmts.rebind(query), args...)
	}
	s.qlog.Trace(ctx, begin, func() (string, int64) { return query, -1 }, err)
	return rows, err
}

// exec runs a prepared statement inside the transaction, on the
// transaction's connection (where database/sql keeps it prepared after the
// first use), and returns the rows it affected.
func (t *gormTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	begin := time.Now()
	sqlTx, ok := t.db.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return 0, fmt.Errorf("store: a transaction runs on %T, not *sql.Tx", t.db.Statement.ConnPool)
	}
	var res sql.Result
	var err error
	if st := t.stmts.prepared(query); st != nil {
		res, err = sqlTx.StmtContext(ctx, st).ExecContext(ctx, args...)
	} else {
		// Preparing it for the pool takes a connection of its own: one
		// this transaction must not wait for, as the transactions holding
		// them may be waiting for this one's row lock. Run it unprepared
		// this once and prepare it in the background.
		t.stmts.prepareInBackground(context.WithoutCancel(ctx), query)
		res, err = sqlTx.ExecContext(ctx, t.stmts.rebind(query), args...)
	}
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	t.qlog.Trace(ctx, begin, func() (string, int64) { return query, n }, err)
	return n, err
}
