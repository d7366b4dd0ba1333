// Adapter statuses: one row per resource and adapter.

package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/hyperfleet/hyperfleet/resource"
)

func (s *gormStore) ListStatuses(ctx context.Context, resourceID string, offset, limit int) ([]resource.AdapterStatus, int64, error) {
	db := s.db.WithContext(ctx).Model(&statusRow{}).Where("resource_id = ?", resourceID)
	var total int64
	if err := db.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count statuses of %s: %w", resourceID, err)
	}
	var rows []statusRow
	if err := db.Order("adapter").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list statuses of %s: %w", resourceID, err)
	}
	out, err := statusesFromRows(rows)
	return out, total, err
}

func statusesFromRows(rows []statusRow) ([]resource.AdapterStatus, error) {
	out := make([]resource.AdapterStatus, 0, len(rows))
	for i := range rows {
		st, err := fromStatusRow(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (t *gormTx) Statuses(ctx context.Context, resourceID string) ([]resource.AdapterStatus, error) {
	var rows []statusRow
	if err := t.db.WithContext(ctx).Where("resource_id = ?", resourceID).Order("adapter").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("statuses of %s: %w", resourceID, err)
	}
	return statusesFromRows(rows)
}

func (t *gormTx) PutStatus(ctx context.Context, resourceID string, st resource.AdapterStatus) error {
	row, err := toStatusRow(resourceID, &st)
	if err != nil {
		return fmt.Errorf("encode status %s/%s: %w", resourceID, st.Adapter, err)
	}
	err = t.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "resource_id"}, {Name: "adapter"}},
		DoUpdates: clause.AssignmentColumns([]string{
			"observed_generation", "observed_time", "conditions", "metadata", "data", "created_time", "last_report_time",
		}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("upsert status %s/%s: %w", resourceID, st.Adapter, err)
	}
	return nil
}
