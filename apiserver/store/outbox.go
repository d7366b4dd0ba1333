// Outbox: reconcile requests written with each change, read and acknowledged by the relay.

package store

import (
	"context"
	"fmt"
	"time"
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
	out := make([]OutboxEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, OutboxEntry{ID: r.ID, Kind: r.Kind, ResourceID: r.ResourceID, ParentID: r.ParentID,
			Generation: r.Generation, Reason: r.Reason, CreatedTime: r.CreatedTime.UTC(), TraceParent: r.TraceParent})
	}
	return out, nil
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
		Reason: e.Reason, CreatedTime: utc(e.CreatedTime), TraceParent: e.TraceParent}
	if err := t.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("append outbox for %s %s: %w", e.Kind, e.ResourceID, err)
	}
	return nil
}
