// Resources: reads, pages and row-locked writes of the resources table.

package store

import (
	"context"
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
	if kind == "" {
		err = s.queryRow(ctx, getResourceSQL, scan, id)
	} else {
		err = s.queryRow(ctx, getResourceOfKindSQL, scan, id, kind)
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

func (s *gormStore) ListResources(ctx context.Context, q ListQuery) ([]resource.Resource, int64, error) {
	var total int64
	if err := listFilter(s.db.WithContext(ctx), q).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", q.Kind, err)
	}
	if total == 0 || int64(q.Offset) >= total {
		return []resource.Resource{}, total, nil
	}
	var rows []resourceRow
	if err := listPage(listFilter(s.db.WithContext(ctx), q), q).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", q.Kind, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(s.kinds, &rows[i])
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, nil
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
	if q.Where.SQL != "" {
		db = db.Where(q.Where.SQL, q.Where.Args...)
	}
	return db
}

// listPage orders a list query's matches and cuts its page.
func listPage(db *gorm.DB, q ListQuery) *gorm.DB {
	order := q.Order
	if len(order) == 0 {
		order = search.DefaultOrder
	}
	lastDesc := false
	for _, o := range order {
		db = db.Order(clause.OrderByColumn{Column: clause.Column{Table: "resources", Name: o.Column}, Desc: o.Desc})
		lastDesc = o.Desc
	}
	// id breaks ties so pages never overlap or skip.
	db = db.Order(clause.OrderByColumn{Column: clause.Column{Table: "resources", Name: "id"}, Desc: lastDesc})
	return db.Offset(q.Offset).Limit(q.Limit)
}

func (s *gormStore) LiveResources(ctx context.Context, kind, afterID string, limit int) ([]resource.Resource, error) {
	var rows []resourceRow
	err := s.db.WithContext(ctx).Where("kind = ? AND id > ?", kind, afterID).Order("id").Limit(limit).Find(&rows).Error
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
	err := s.db.WithContext(ctx).Select("id", "parent_id", "generation").Where("kind = ? AND id > ?", kind, afterID).Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("page %s ids after %q: %w", kind, afterID, err)
	}
	out := make([]LiveRef, 0, len(rows))
	for i := range rows {
		ref := LiveRef{ID: rows[i].ID, Generation: rows[i].Generation}
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
	var row resourceRow
	err := db.Where("id = ? AND kind = ?", id, kind).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s %s: %w", kind, id, err)
	}
	r, err := fromRow(t.kinds, &row)
	return &r, err
}

func (t *gormTx) CreateResource(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.Name, err)
	}
	if err := t.db.WithContext(ctx).Create(&row).Error; err != nil {
		if isUniqueViolation(err) {
			return ErrNameConflict
		}
		return fmt.Errorf("insert %s %s: %w", r.Kind, r.Name, err)
	}
	return nil
}

func (t *gormTx) UpdateResource(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.ID, err)
	}
	n, err := t.exec(ctx, updateResourceSQL, row.Generation, row.Spec, row.Labels, row.Conditions, row.Refs,
		row.UpdatedTime, row.UpdatedBy, row.DeletedTime, row.DeletedBy, r.ID)
	if err != nil {
		return fmt.Errorf("update %s %s: %w", r.Kind, r.ID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func (t *gormTx) Children(ctx context.Context, parentID string) ([]resource.Resource, error) {
	db := t.db.WithContext(ctx)
	if t.backend == BackendPostgres {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var rows []resourceRow
	if err := db.Where("parent_id = ?", parentID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("children of %s: %w", parentID, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(t.kinds, &rows[i])
		if err != nil {
			return nil, err
		}
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

func (t *gormTx) RemoveResource(ctx context.Context, id string) error {
	// Foreign keys cascade to node pools and all their statuses.
	if err := t.db.WithContext(ctx).Where("id = ?", id).Delete(&resourceRow{}).Error; err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
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
