// Outbox: reconcile requests written with each change, read and acknowledged by the relay.

package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

func (s *gormStore) OutboxBacklog(ctx context.Context) (int64, time.Time, error) {
	var n int64
	db := s.db.WithContext(ctx).Model(&outboxRow{})
	if err := db.Count(&n).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("count outbox: %w", err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	var first outboxRow
	if err := s.db.WithContext(ctx).Order("id").Limit(1).Find(&first).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("read oldest outbox entry: %w", err)
	}
	return n, first.CreatedTime.UTC(), nil
}

func (s *gormStore) PendingOutbox(ctx context.Context, limit int) ([]OutboxEntry, error) {
	var rows []outboxRow
	if err := s.db.WithContext(ctx).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return outboxEntries(rows), nil
}

func outboxEntries(rows []outboxRow) []OutboxEntry {
	out := make([]OutboxEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, OutboxEntry{ID: r.ID, Kind: r.Kind, ResourceID: r.ResourceID, ParentID: r.ParentID,
			Generation: r.Generation, Reason: r.Reason, CreatedTime: r.CreatedTime.UTC(), TraceParent: r.TraceParent, Tenant: r.Tenant})
	}
	return out
}

// ClaimOutbox on PostgreSQL locks the rows it hands to deliver (FOR UPDATE
// SKIP LOCKED) in a transaction that lasts until deliver returns, so API
// replicas split a backlog instead of each handing all of it to Temporal,
// and a replica that dies releases its rows with its connection. SQLite
// serves one API process, so it only reads: a transaction held there would
// block every write.
func (s *gormStore) ClaimOutbox(ctx context.Context, limit int, deliver func(context.Context, []OutboxEntry) []int64) (int, error) {
	if s.backend != BackendPostgres {
		rows, err := s.PendingOutbox(ctx, limit)
		if err != nil || len(rows) == 0 {
			return 0, err
		}
		// Acknowledged even when ctx ended: Temporal has them.
		return len(rows), s.AckOutbox(context.WithoutCancel(ctx), deliver(ctx, rows)...)
	}
	n := 0
	// The transaction outlives a cancelled ctx so that rows Temporal
	// accepted are still removed.
	err := s.db.WithContext(context.WithoutCancel(ctx)).Transaction(func(tx *gorm.DB) error {
		var rows []outboxRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"}).
			Order("id").Limit(limit).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("claim outbox rows: %w", err)
		}
		n = len(rows)
		if n == 0 {
			return nil
		}
		acked := deliver(ctx, outboxEntries(rows))
		if len(acked) == 0 {
			return nil
		}
		if err := tx.Where("id IN ?", acked).Delete(&outboxRow{}).Error; err != nil {
			return fmt.Errorf("ack outbox: %w", err)
		}
		return nil
	})
	return n, err
}

func (s *gormStore) AckOutbox(ctx context.Context, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Delete(&outboxRow{}).Error; err != nil {
		return fmt.Errorf("ack outbox: %w", err)
	}
	return nil
}

func (t *gormTx) AppendOutbox(ctx context.Context, e OutboxEntry) error {
	row := outboxRow{Kind: e.Kind, ResourceID: e.ResourceID, ParentID: e.ParentID, Generation: e.Generation,
		Reason: e.Reason, CreatedTime: utc(e.CreatedTime), TraceParent: e.TraceParent, Tenant: e.Tenant}
	if err := t.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("append outbox for %s %s: %w", e.Kind, e.ResourceID, err)
	}
	return nil
}
