// Resources: reads, pages and row-locked writes of the resources table.

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

func (s *gormStore) GetResource(ctx context.Context, kind, id string) (*resource.Resource, error) {
	var row resourceRow
	scan := func(sc rowScanner) error { return scanResource(sc, &row) }
	var err error
	switch tenant := scopeOf(ctx); {
	case kind == "" && tenant == "":
		err = s.queryRow(ctx, getResourceSQL, scan, id)
	case kind == "":
		err = s.queryRow(ctx, getScopedResourceSQL, scan, id, tenant)
	case tenant == "":
		err = s.queryRow(ctx, getResourceOfKindSQL, scan, id, kind)
	default:
		err = s.queryRow(ctx, getScopedResourceOfKindSQL, scan, id, kind, tenant)
	}
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", kind, id, err)
	}
	r, err := fromRow(s.kinds, &row)
	return &r, err
}

func (s *gormStore) ListResources(ctx context.Context, q ListQuery) (Page, error) {
	q, ok := scopedList(ctx, q)
	if !ok {
		return Page{Items: []resource.Resource{}}, nil
	}
	order := search.WithTieBreak(q.Order)
	if plan := termPlan(q, order); plan != nil {
		return s.listByTerms(ctx, q, order, plan)
	}
	return s.listBySQL(ctx, q, order)
}

// listBySQL is ListResources on the search's SQL form.
func (s *gormStore) listBySQL(ctx context.Context, q ListQuery, order []search.OrderTerm) (Page, error) {
	counted := countsMatches(q)
	page := Page{Items: []resource.Resource{}}
	if !counted || q.Limit <= 0 {
		total, err := s.countMatches(ctx, q)
		if err != nil {
			return Page{}, err
		}
		page.Total = total
		if total == 0 || q.Limit <= 0 || (q.After == nil && int64(q.Offset) >= total) {
			return page, nil
		}
	}
	rows, err := s.pageRows(ctx, q, order, counted)
	if err != nil {
		return Page{}, fmt.Errorf("list %s: %w", q.Kind, err)
	}
	defer rows.Close()
	var extra []any
	if counted {
		extra = []any{&page.Total}
	}
	if err := s.readPage(rows, &page, q, order, extra...); err != nil {
		return Page{}, err
	}
	if counted && len(page.Items) == 0 && (q.Offset > 0 || q.After != nil) {
		// Past the last match: no row carried the total.
		if page.Total, err = s.countMatches(ctx, q); err != nil {
			return Page{}, err
		}
	}
	return page, nil
}

// readPage reads a page query's rows (one more than the page, which only
// says that another page follows) into page.
func (s *gormStore) readPage(rows *sql.Rows, page *Page, q ListQuery, order []search.OrderTerm, extra ...any) error {
	var last resourceRow
	for rows.Next() {
		if len(page.Items) == q.Limit {
			page.Next = cursorOf(&last, order)
			break
		}
		var row resourceRow
		if err := scanResource(rows, &row, extra...); err != nil {
			return fmt.Errorf("list %s: %w", q.Kind, err)
		}
		r, err := fromRow(s.kinds, &row)
		if err != nil {
			return err
		}
		page.Items = append(page.Items, r)
		last = row
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list %s: %w", q.Kind, err)
	}
	return nil
}

// countsMatches says whether a list's total is counted from its matches
// (a search, a parent's children) rather than read from resource_counts.
// Such a list reads its page and its total in one statement, so each
// match is found and checked once, not once for the count and again for
// the page.
func countsMatches(q ListQuery) bool { return q.ParentID != "" || q.Where.SQL != "" }

// pageQuery reads a counted list's page (a search, a parent's children) in
// its full order, and one row more: that row says whether another page
// follows. Each row also carries the number of matches (a window over the
// whole match set, computed before a continuation token's position cuts
// it).
func pageQuery(db *gorm.DB, q ListQuery, order []search.OrderTerm) (*gorm.DB, error) {
	matches := listFilter(db.Session(&gorm.Session{NewDB: true}), q).Select(resourceColumns + ", count(*) OVER () AS list_total")
	db = db.Table("(?) AS matches", matches)
	if q.After != nil {
		w, err := search.After("matches", order, q.After)
		if err != nil {
			return nil, err
		}
		db = db.Where(w.SQL, w.Args...)
	}
	return db.Select(resourceColumns + ", list_total").Order(search.OrderBy("matches", order)).Offset(q.Offset).Limit(q.Limit + 1), nil
}

// pageRows runs a list's page query. A plain list (no search, no parent),
// what a console or a CLI reads most, runs a hand-written statement kept
// prepared: gorm built it anew on each request (a tenth of a first page's
// CPU) and the SQLite driver parsed it again.
func (s *gormStore) pageRows(ctx context.Context, q ListQuery, order []search.OrderTerm, counted bool) (*sql.Rows, error) {
	if counted {
		db, err := pageQuery(s.db.WithContext(ctx), q, order)
		if err != nil {
			return nil, err
		}
		return db.Rows()
	}
	query, args, err := plainPageSQL(q, order)
	if err != nil {
		return nil, err
	}
	return s.query(ctx, query, args...)
}

// plainPageSQL is the page statement of a list with neither a search nor a
// parent, with its arguments: like pageQuery's, one row more than the
// page, but with the total from resource_counts instead of a window. Its
// text depends only on the shape of the request (whether a kind is given,
// the order, which position values are NULL), never on a value, so it can
// be kept prepared.
func plainPageSQL(q ListQuery, order []search.OrderTerm) (string, []any, error) {
	var conds []string
	var args []any
	if q.Kind != "" {
		conds = append(conds, "resources.kind = ?")
		args = append(args, q.Kind)
	}
	if q.Tenant != "" {
		conds = append(conds, tenantFilter)
		args = append(args, q.Tenant)
	}
	if q.After != nil {
		w, err := search.After("resources", order, q.After)
		if err != nil {
			return "", nil, err
		}
		conds = append(conds, "("+w.SQL+")")
		args = append(args, w.Args...)
	}
	query := "SELECT " + resourceColumns + " FROM resources"
	if len(conds) > 0 {
		query += " WHERE " + strings.Join(conds, " AND ")
	}
	query += " ORDER BY " + search.OrderBy("resources", order) + " LIMIT ? OFFSET ?"
	return query, append(args, q.Limit+1, q.Offset), nil
}

// countMatches is a list's total. A whole kind's (or the whole table's)
// comes from resource_counts, which triggers keep in step with every
// insert and delete (schema version 5): counting 100,000 rows on each
// request was most of what a first page cost. Children and searches count
// their matches, which their indexes bound.
func (s *gormStore) countMatches(ctx context.Context, q ListQuery) (int64, error) {
	var total int64
	var err error
	switch {
	case countsMatches(q):
		err = listFilter(s.db.WithContext(ctx), q).Count(&total).Error
	case q.Tenant != "":
		total, err = s.tenantCount(ctx, q.Tenant, q.Kind)
	case q.Kind != "":
		err = s.queryRow(ctx, countKindSQL, func(sc rowScanner) error { return sc.Scan(&total) }, q.Kind)
	default:
		err = s.queryRow(ctx, countAllSQL, func(sc rowScanner) error { return sc.Scan(&total) })
	}
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", q.Kind, err)
	}
	return total, nil
}

// cursorOf is the position of row in order (see search.Cursor).
func cursorOf(row *resourceRow, order []search.OrderTerm) search.Cursor {
	c := make(search.Cursor, len(order))
	for i, o := range order {
		switch o.Column {
		case "id":
			c[i] = row.ID
		case "name":
			c[i] = row.Name
		case "generation":
			c[i] = row.Generation
		case "created_time":
			c[i] = row.CreatedTime.UTC()
		case "updated_time":
			c[i] = row.UpdatedTime.UTC()
		case "deleted_time":
			if row.DeletedTime != nil {
				c[i] = row.DeletedTime.UTC()
			}
		case "created_by":
			c[i] = row.CreatedBy
		case "updated_by":
			c[i] = row.UpdatedBy
		}
	}
	return c
}

// listFilter selects the resources a list query matches.
func listFilter(db *gorm.DB, q ListQuery) *gorm.DB {
	db = db.Model(&resourceRow{})
	if q.Kind != "" {
		db = db.Where("resources.kind = ?", q.Kind)
	}
	if q.ParentID != "" {
		db = db.Where("resources.parent_id = ?", q.ParentID)
	}
	if q.Tenant != "" {
		db = db.Where(tenantFilter, q.Tenant)
	}
	if q.Where.SQL != "" {
		db = db.Where(q.Where.SQL, q.Where.Args...)
	}
	return db
}

func (s *gormStore) LiveResources(ctx context.Context, kind, afterID string, limit int) ([]resource.Resource, error) {
	var rows []resourceRow
	err := s.db.WithContext(ctx).Select(resourceColumns).Where("kind = ? AND id > ?", kind, afterID).Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("page %s after %q: %w", kind, afterID, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(s.kinds, &rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *gormStore) LiveRefs(ctx context.Context, kind, afterID string, limit int) ([]LiveRef, error) {
	var rows []resourceRow
	err := s.db.WithContext(ctx).Select("id", "parent_id", "generation", "tenant").Where("kind = ? AND id > ?", kind, afterID).Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("page %s ids after %q: %w", kind, afterID, err)
	}
	out := make([]LiveRef, 0, len(rows))
	for i := range rows {
		ref := LiveRef{ID: rows[i].ID, Generation: rows[i].Generation, Tenant: rows[i].Tenant}
		if rows[i].ParentID != nil {
			ref.ParentID = *rows[i].ParentID
		}
		out = append(out, ref)
	}
	return out, nil
}

func (s *gormStore) CountResources(ctx context.Context, kind string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&resourceRow{}).Where("kind = ?", kind).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count %s resources: %w", kind, err)
	}
	return n, nil
}

func (t *gormTx) LockResource(ctx context.Context, kind, id string) (*resource.Resource, error) {
	db := t.db.WithContext(ctx)
	if t.backend == BackendPostgres {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	db = db.Select(resourceColumns).Where("id = ? AND kind = ?", id, kind)
	if tenant := scopeOf(ctx); tenant != "" {
		// In the WHERE, not checked after: another tenant's row is
		// neither read nor locked (FOR UPDATE locks only matching rows).
		db = db.Where(tenantFilter, tenant)
	}
	var row resourceRow
	err := db.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s %s: %w", kind, id, err)
	}
	r, err := fromRow(t.kinds, &row)
	t.noteLocked(&r)
	return &r, err
}

func (t *gormTx) CreateResource(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.Name, err)
	}
	// Written by hand: gorm does not write Tenant (see resourceRow).
	_, err = t.exec(ctx, insertResourceSQL, row.ID, row.Kind, row.ParentID, row.Name, row.Generation, row.Spec, row.Labels,
		row.Conditions, row.ConditionTerms, row.Refs, row.CreatedTime, row.UpdatedTime, row.DeletedTime,
		row.CreatedBy, row.UpdatedBy, row.DeletedBy, row.Tenant)
	if err != nil {
		if isUniqueViolation(err) {
			return ErrNameConflict
		}
		return fmt.Errorf("insert %s %s: %w", r.Kind, r.Name, err)
	}
	t.noteChange(ChangeAdded, row)
	t.noteLocked(r)
	return nil
}

func (t *gormTx) UpdateResource(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.ID, err)
	}
	n, err := t.exec(ctx, updateResourceSQL, row.Generation, row.Spec, row.Labels, row.Conditions, row.ConditionTerms, row.Refs,
		row.UpdatedTime, row.UpdatedBy, row.DeletedTime, row.DeletedBy, r.ID)
	if err != nil {
		return fmt.Errorf("update %s %s: %w", r.Kind, r.ID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	t.noteChange(ChangeModified, row)
	t.noteLocked(r)
	return nil
}

func (t *gormTx) UpdateState(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.ID, err)
	}
	n, err := t.exec(ctx, updateStateSQL, row.Generation, row.Conditions, row.ConditionTerms, row.UpdatedTime, row.UpdatedBy, row.DeletedTime, row.DeletedBy, r.ID)
	if err != nil {
		return fmt.Errorf("update state of %s %s: %w", r.Kind, r.ID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	if !t.unchanged(r) {
		t.noteChange(ChangeModified, row)
		t.noteLocked(r)
	}
	return nil
}

func (t *gormTx) Children(ctx context.Context, parentID string) ([]resource.Resource, error) {
	db := t.db.WithContext(ctx)
	if t.backend == BackendPostgres {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var rows []resourceRow
	if err := db.Select(resourceColumns).Where("parent_id = ?", parentID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("children of %s: %w", parentID, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(t.kinds, &rows[i])
		if err != nil {
			return nil, err
		}
		t.noteLocked(&r)
		out = append(out, r)
	}
	return out, nil
}

func (t *gormTx) CountChildren(ctx context.Context, parentID string) (int, error) {
	var n int64
	if err := t.db.WithContext(ctx).Model(&resourceRow{}).Where("parent_id = ?", parentID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count children of %s: %w", parentID, err)
	}
	return int(n), nil
}

func (t *gormTx) WaitingChildren(ctx context.Context, parentID string) ([]ChildRef, error) {
	var rows []resourceRow
	err := t.db.WithContext(ctx).Select("kind", "id", "generation", "tenant", "conditions").
		Where("parent_id = ? AND deleted_time IS NULL", parentID).Order("id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", parentID, err)
	}
	out := make([]ChildRef, 0, len(rows))
	for i := range rows {
		conds, err := decodeConditions(rows[i].Conditions)
		if err != nil {
			return nil, fmt.Errorf("conditions of %s %s: %w", rows[i].Kind, rows[i].ID, err)
		}
		if c, ok := resource.FindCondition(conds, resource.ConditionReconciled); ok && c.Status == resource.StatusTrue {
			continue
		}
		out = append(out, ChildRef{Kind: rows[i].Kind, LiveRef: LiveRef{ID: rows[i].ID, ParentID: parentID, Generation: rows[i].Generation, Tenant: rows[i].Tenant}})
	}
	return out, nil
}

func (t *gormTx) RemoveResource(ctx context.Context, id string) error {
	removed, err := t.removedRows(ctx, id)
	if err != nil {
		return err
	}
	// A round in flight of a removed resource (or of its node pools) will
	// never start: stop counting it.
	err = t.db.WithContext(ctx).Where("resource_id = ? OR resource_id IN (SELECT id FROM resources WHERE parent_id = ?)", id, id).
		Delete(&admissionRow{}).Error
	if err != nil {
		return fmt.Errorf("remove the admissions of %s: %w", id, err)
	}
	// Foreign keys cascade to node pools and all their statuses.
	if err := t.db.WithContext(ctx).Where("id = ?", id).Delete(&resourceRow{}).Error; err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	for i := range removed {
		t.noteChange(ChangeDeleted, removed[i])
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}
