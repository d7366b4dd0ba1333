// Searches answered by the term index (schema version 6 on SQLite, 7 and
// 8 on PostgreSQL): the count and the page of a search that is a
// conjunction of indexed equalities (search.TermPlan) read resource_terms
// and the kept counts of its terms, not the stored documents.

package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// termPlan returns the term plan a list runs on, or nil when it runs on
// its SQL: the term index's rows carry one kind and the creation time, so
// a list of one kind, not of a parent's children, in the default order
// (either direction) qualifies.
//
// A tenant's list adds its tenancy's term (schema version 10): alone, it
// is the plan of a list without a search, whose total is then the term's
// kept count and whose page walks the tenancy's own index rows; beside a
// search's terms it is one more probe, or the walked term when it is the
// rarest. A search with no plan keeps its SQL form, which the tenancy's
// index (resources_tenant_created) bounds.
func termPlan(q ListQuery, order []search.OrderTerm) *search.TermPlan {
	if q.Kind == "" || q.ParentID != "" {
		return nil
	}
	if len(order) != 2 || order[0].Column != "created_time" || order[1].Column != "id" || order[0].Desc != order[1].Desc {
		return nil
	}
	p := q.Where.Plan
	if q.Tenant != "" {
		switch {
		case q.Where.SQL == "":
			p = &search.TermPlan{Terms: []search.Where{tenantTerm(q.Tenant)}}
		case p != nil:
			p = &search.TermPlan{Terms: append(slices.Clone(p.Terms), tenantTerm(q.Tenant)), Residual: p.Residual}
		}
	}
	if p == nil || len(p.Terms) == 0 {
		return nil
	}
	return p
}

// tenantTerm is the term every resource of a tenancy holds: t:<canonical
// tenancy>, written by a trigger when the resource is stored (schema
// version 10), or by AssignTenancy when a resource stored without one is
// adopted. No label, spec or condition term starts with "t:".
func tenantTerm(tenant string) search.Where {
	return search.Where{SQL: "?", Args: []any{"t:" + tenant}}
}

// tenantFilter is the SQL form of a tenant's scope over resources. The
// second comparison changes no result; it lets both databases use the
// partial indexes that hold only tenants' rows (schema version 10).
const tenantFilter = "resources.tenant = ? AND resources.tenant <> ''"

// scopedWhere is a list's search with its tenant's scope, when it has one.
func scopedWhere(q ListQuery) search.Where {
	if q.Tenant == "" {
		return q.Where
	}
	w := search.Where{SQL: tenantFilter, Args: []any{q.Tenant}, Plan: q.Where.Plan}
	if q.Where.SQL != "" {
		w.SQL += " AND (" + q.Where.SQL + ")"
		w.Args = append(w.Args, q.Where.Args...)
	}
	return w
}

// tenantCount is how many resources of a kind ("" for every kind) a
// tenancy holds: its term's kept count, read without counting rows.
func (s *gormStore) tenantCount(ctx context.Context, tenant, kind string) (int64, error) {
	term := "t:" + tenant
	query, args := "SELECT COALESCE(SUM(n), 0) FROM term_stats WHERE term = ?", []any{term}
	if s.backend == BackendPostgres {
		query, args = "SELECT COALESCE((SELECT SUM(n) FROM term_counts WHERE term = ?), 0) + COALESCE((SELECT SUM(n) FROM term_deltas WHERE term = ?), 0)", []any{term, term}
		if kind != "" {
			query, args = "SELECT COALESCE((SELECT SUM(n) FROM term_counts WHERE term = ? AND kind = ?), 0) + COALESCE((SELECT SUM(n) FROM term_deltas WHERE term = ? AND kind = ?), 0)",
				[]any{term, kind, term, kind}
		}
	} else if kind != "" {
		query, args = query+" AND kind = ?", append(args, kind)
	}
	var n int64
	err := s.queryRow(ctx, query, func(sc rowScanner) error { return sc.Scan(&n) }, args...)
	return n, err
}

// termMatchSQL is the WHERE clause over "resource_terms AS d", d being
// the first term's rows of the kind (the rarest, see drivenBy): every
// other term is a probe of the resource's own terms (the table's primary
// key), the residual a check of its row. probeEnd closes each probe's
// subquery (see termPageSQL).
func termMatchSQL(kind string, p *search.TermPlan, row, probeEnd string) (string, []any) {
	var b strings.Builder
	args := append([]any{}, p.Terms[0].Args...)
	b.WriteString("d.term = " + p.Terms[0].SQL + " AND d.kind = ?")
	args = append(args, kind)
	for i, t := range p.Terms[1:] {
		fmt.Fprintf(&b, " AND EXISTS (SELECT 1 FROM resource_terms AS t%d WHERE t%d.resource_id = d.resource_id AND t%d.term = %s%s)", i+1, i+1, i+1, t.SQL, probeEnd)
		args = append(args, t.Args...)
	}
	if p.Residual.SQL != "" {
		b.WriteString(" AND " + fmt.Sprintf(row, p.Residual.SQL))
		args = append(args, p.Residual.Args...)
	}
	return b.String(), args
}

// termCountSQL counts a term plan's matches; without a residual it reads
// the term index only.
func termCountSQL(kind string, p *search.TermPlan) (string, []any) {
	where, args := termMatchSQL(kind, p, "EXISTS (SELECT 1 FROM resources WHERE resources.id = d.resource_id AND %s)", "")
	return "SELECT count(*) FROM resource_terms AS d WHERE " + where, args
}

// termPageSQL reads a term plan's page, and one row more: it walks the
// first term's rows in (created_time, id) order from the position (an
// index range, no sort) and stops once the page is full. SQLite is told
// the join order (CROSS JOIN); PostgreSQL's planner finds it.
//
// On PostgreSQL a first page is also written so that it can be planned
// once. A prepared statement is planned afresh for its parameters on
// every run unless a generic plan, planned once, is estimated to cost no
// more; for a label and a condition that planning took 0.56 ms beside
// 0.49 ms of execution at 100,000 clusters. A generic plan is chosen from
// the table's statistics, not the search's terms, so it must have no
// other shape than the walk: the LIMIT is written out (with a parameter
// the planner expects a tenth of the term's rows and sorts them: 8.8 ms),
// and each probe ends in OFFSET 0, which keeps it a probe per walked row
// (without it, statistics that say terms are many and rare, as a
// per-cluster label makes them, turn the generic plan into a hash join of
// both terms' holders and a sort: 48 ms against 0.4 ms). A page after a
// continuation token or at an offset keeps its LIMIT and OFFSET
// parameters, and a plan per run: with a position in the parameters the
// generic plan reads the term's rows before it and sorts them
// (TestTermPageKeepsOnePlan).
func termPageSQL(backend string, q ListQuery, order []search.OrderTerm, p *search.TermPlan) (string, []any) {
	residual, probeEnd := "%s", ""
	if backend == BackendPostgres {
		probeEnd = " OFFSET 0"
		// PostgreSQL guesses an equality on an expression it has no
		// statistics for matches 1 row in 200, so it expects the page to
		// need every walked row, and sorts them all (264 ms at 100,000
		// clusters for a shard, Ready and spec.nodes). Under COALESCE,
		// which changes no result in a WHERE, it guesses one in two, and
		// walks the term in order until the page is full (20 ms).
		residual = "COALESCE(%s, FALSE)"
	}
	where, args := termMatchSQL(q.Kind, p, residual, probeEnd)
	dir, op := "", ">"
	if order[0].Desc {
		dir, op = " DESC", "<"
	}
	if q.After != nil {
		where += fmt.Sprintf(" AND d.created_time %s= ? AND (d.created_time, d.resource_id) %s (?, ?)", op, op)
		args = append(args, q.After[0], q.After[0], q.After[1])
	}
	cols := "resources." + strings.ReplaceAll(resourceColumns, ", ", ", resources.")
	join := "CROSS JOIN"
	if backend == BackendPostgres {
		join = "JOIN"
	}
	query := "SELECT " + cols + " FROM resource_terms AS d " + join + " resources ON resources.id = d.resource_id WHERE " + where +
		" ORDER BY d.created_time" + dir + ", d.resource_id" + dir
	if backend == BackendPostgres && q.Offset == 0 && q.After == nil {
		// At most the API's largest page size: the statements stay few.
		return query + " LIMIT " + strconv.Itoa(q.Limit+1), args
	}
	return query + " LIMIT ? OFFSET ?", append(args, q.Limit+1, q.Offset)
}

// specChangesTerm is PostgreSQL's marker of spec changes: every change of
// a stored spec appends a zero delta for it (schema version 9), so its
// version moves with any spec of the kind. No resource holds it.
const specChangesTerm = "s:*"

// Term statistics on PostgreSQL: a term's count is term_counts' plus its
// deltas, and its version term_counts' beside the number of deltas (both
// move with every change of the holders: deltas are only appended until
// a compaction folds them and moves the version).
const (
	pgTermVersion = "COALESCE((SELECT version FROM term_counts WHERE term = %[1]s AND kind = ?), 0) * 4294967296 + (SELECT count(*) FROM term_deltas WHERE term = %[1]s AND kind = ?)"
	pgTermCount   = "COALESCE((SELECT n FROM term_counts WHERE term = %[1]s AND kind = ?), 0) + COALESCE((SELECT sum(n) FROM term_deltas WHERE term = %[1]s AND kind = ?), 0)"
)

// termStatsSQL selects, in one row, each of a plan's terms' version and
// count of holders, then (see statsLen) the version of the spec-changes
// marker, then the given column. On SQLite both are term_stats' (0 and 0
// for a term no resource of the kind has held since version 6).
func termStatsSQL(backend, kind string, p *search.TermPlan, more string) (string, []any) {
	cols := make([]string, 0, 2*len(p.Terms)+2)
	var args []any
	add := func(e string, term search.Where) {
		cols = append(cols, fmt.Sprintf(e, term.SQL))
		for range strings.Count(e, "%[1]s") {
			args = append(args, term.Args...)
			args = append(args, kind)
		}
	}
	for _, t := range p.Terms {
		if backend == BackendPostgres {
			add(pgTermVersion, t)
			add(pgTermCount, t)
		} else {
			add("COALESCE((SELECT version FROM term_stats WHERE term = %[1]s AND kind = ?), 0)", t)
			add("COALESCE((SELECT n FROM term_stats WHERE term = %[1]s AND kind = ?), 0)", t)
		}
	}
	if specResidual(backend, p) {
		add(pgTermVersion, search.Where{SQL: "?", Args: []any{specChangesTerm}})
	}
	if more != "" {
		cols = append(cols, more)
	}
	return "SELECT " + strings.Join(cols, ", "), args
}

// specResidual reports whether a plan's residual checks spec values no
// term follows: on PostgreSQL, whose index has no spec terms, every
// residual does. (SQLite's residual rechecks a number whose spec term
// it also holds, and that term moves with the spec.)
func specResidual(backend string, p *search.TermPlan) bool {
	return backend == BackendPostgres && p.Residual.SQL != ""
}

// statsLen is how many numbers termStatsSQL selects before its extra
// column: a version and a count per term, and the marker's version.
func statsLen(backend string, p *search.TermPlan) int {
	if specResidual(backend, p) {
		return 2*len(p.Terms) + 1
	}
	return 2 * len(p.Terms)
}

// rarest is the index of the term held by the fewest resources (the first
// such), given n terms' versions and counts as termStatsSQL reads them.
func rarest(stats []int64, n int) int {
	best := 0
	for i := 1; i < n; i++ {
		if stats[2*i+1] < stats[2*best+1] {
			best = i
		}
	}
	return best
}

// drivenBy is the plan with its i-th term first: the one whose index rows
// a count or a page walks.
func drivenBy(p *search.TermPlan, i int) *search.TermPlan {
	terms := make([]search.Where, 0, len(p.Terms))
	terms = append(terms, p.Terms[i])
	terms = append(terms, p.Terms[:i]...)
	terms = append(terms, p.Terms[i+1:]...)
	return &search.TermPlan{Terms: terms, Residual: p.Residual}
}

// termCount is a plan's total, and the plan ordered to walk its rarest
// term. A term no resource of the kind holds makes the total 0, and one
// term alone (no residual) has its total in the kept counts. Otherwise a
// total counted earlier is reused while the versions of its terms are
// unchanged: the versions move with every change of the postings the
// count read (a number's residual included, since any change of a spec
// rewrites its spec terms; on PostgreSQL the spec-changes marker moves),
// so equal versions mean an equal count. Failing that, the versions and
// the count are read in one statement, from one snapshot, and kept. On
// PostgreSQL a plan with a spec residual is counted by its search's SQL
// form (where): its GIN indexes, intersected, leave fewer rows to read
// than the walk, which reads every holder's row (70 against 190 ms at
// 100,000 clusters for a shard, Ready and spec.nodes).
// It also returns how many resources hold the walked term.
func (s *gormStore) termCount(ctx context.Context, kind string, p *search.TermPlan, where search.Where) (total int64, walk *search.TermPlan, held int64, err error) {
	query, args := termStatsSQL(s.backend, kind, p, "")
	stats := make([]int64, statsLen(s.backend, p))
	if err := s.scanOne(ctx, query, args, stats); err != nil {
		return 0, nil, 0, err
	}
	first := rarest(stats, len(p.Terms))
	walk = drivenBy(p, first)
	switch {
	case stats[2*first+1] <= 0:
		return 0, walk, 0, nil
	case len(p.Terms) == 1 && p.Residual.SQL == "":
		return stats[1], walk, stats[1], nil
	}
	key := countKey(kind, p)
	if total, ok := s.counts.get(key, stats); ok {
		return total, walk, stats[2*first+1], nil
	}
	countSQL, countArgs := termCountSQL(kind, walk)
	if specResidual(s.backend, p) {
		countSQL, countArgs = "SELECT count(*) FROM resources WHERE resources.kind = ? AND ("+where.SQL+")", append([]any{kind}, where.Args...)
	}
	query, args = termStatsSQL(s.backend, kind, p, "("+countSQL+")")
	if err := s.scanOne(ctx, query, append(args, countArgs...), stats, &total); err != nil {
		return 0, nil, 0, err
	}
	s.counts.put(key, stats, total)
	// The statement re-read the stats: the walked term stays the rarest
	// the count was taken with.
	return total, walk, stats[2*first+1], nil
}

// defaultMaxSpecWalk bounds the rows a page of a PostgreSQL term plan with
// a spec residual may expect to walk, reading each row to check its spec: a
// spec value rare among the walked term's holders (Ready=True beside one
// region) would read most of them for each page, where the search's SQL
// form finds the few rows through the GIN index on spec. Each store keeps
// its own bound (gormStore.maxSpecWalk), so tests can move it.
const defaultMaxSpecWalk int64 = 5000

// walksTooFar reports whether a page of limit rows expects to read more
// than maxWalk of the walked term's held rows, total of which match.
func walksTooFar(held, total int64, limit int, maxWalk int64) bool {
	return total > 0 && held*int64(limit+1) > maxWalk*total
}

// scanOne runs a one-row read into ints, then into the extra targets.
func (s *gormStore) scanOne(ctx context.Context, query string, args []any, ints []int64, extra ...any) error {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return fmt.Errorf("no row from %s", query)
	}
	dest := make([]any, 0, len(ints)+len(extra))
	for i := range ints {
		dest = append(dest, &ints[i])
	}
	if err := rows.Scan(append(dest, extra...)...); err != nil {
		return err
	}
	return rows.Close()
}

// listByTerms is ListResources on a term plan: the total from termCount,
// the page by one walk of the index from the rarest term.
func (s *gormStore) listByTerms(ctx context.Context, q ListQuery, order []search.OrderTerm, p *search.TermPlan) (Page, error) {
	page := Page{Items: []resource.Resource{}}
	total, walk, held, err := s.termCount(ctx, q.Kind, p, scopedWhere(q))
	if err != nil {
		return Page{}, fmt.Errorf("count %s: %w", q.Kind, err)
	}
	if specResidual(s.backend, p) && q.Limit > 0 && walksTooFar(held, total, q.Limit, s.maxSpecWalk) {
		return s.listBySQL(ctx, q, order)
	}
	page.Total = total
	if page.Total == 0 || q.Limit <= 0 || (q.After == nil && int64(q.Offset) >= page.Total) {
		return page, nil
	}
	pageSQL, pageArgs := termPageSQL(s.backend, q, order, walk)
	rows, err := s.query(ctx, pageSQL, pageArgs...)
	if err != nil {
		return Page{}, fmt.Errorf("list %s: %w", q.Kind, err)
	}
	defer rows.Close()
	if err := s.readPage(rows, &page, q, order); err != nil {
		return Page{}, err
	}
	return page, nil
}

// countKey identifies a plan's count: the kind, each term's expression
// and values, and the residual's.
func countKey(kind string, p *search.TermPlan) string {
	var b strings.Builder
	b.WriteString(kind)
	for _, w := range append(p.Terms, p.Residual) {
		fmt.Fprintf(&b, "\x00%s\x00%#v", w.SQL, w.Args)
	}
	return b.String()
}

// maxCachedCounts bounds countCache; past it an arbitrary entry makes room
// (a console repeats a few searches; a flood of distinct ones only costs
// their counts).
const maxCachedCounts = 4096

// countCache holds the totals of term-plan searches with the versions
// (and counts) of their terms when counted (see termCount).
type countCache struct {
	mu      sync.Mutex
	entries map[string]countEntry
}

type countEntry struct {
	versions []int64
	total    int64
}

func (c *countCache) get(key string, versions []int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !slices.Equal(e.versions, versions) {
		return 0, false
	}
	return e.total, true
}

func (c *countCache) put(key string, versions []int64, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]countEntry{}
	}
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxCachedCounts {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = countEntry{versions: slices.Clone(versions), total: total}
}
