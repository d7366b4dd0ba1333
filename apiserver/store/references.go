// References: the index of typed links by target, for referrer checks.

package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/hyperfleet/hyperfleet/resource"
)

type referenceRow struct {
	ResourceID string `gorm:"primaryKey"`
	RefType    string `gorm:"primaryKey"`
	TargetID   string `gorm:"primaryKey"`
}

func (referenceRow) TableName() string { return "resource_references" }

func (t *gormTx) SetReferences(ctx context.Context, resourceID string, links []resource.Link) error {
	db := t.db.WithContext(ctx)
	if err := db.Where("resource_id = ?", resourceID).Delete(&referenceRow{}).Error; err != nil {
		return fmt.Errorf("clear references of %s: %w", resourceID, err)
	}
	if len(links) == 0 {
		return nil
	}
	rows := make([]referenceRow, 0, len(links))
	for _, l := range links {
		rows = append(rows, referenceRow{ResourceID: resourceID, RefType: l.RefType, TargetID: l.ID})
	}
	if err := db.Create(&rows).Error; err != nil {
		return fmt.Errorf("store references of %s: %w", resourceID, err)
	}
	return nil
}

func (t *gormTx) Referrers(ctx context.Context, targetIDs, excludeIDs []string, limit int) ([]resource.Resource, int64, error) {
	if len(targetIDs) == 0 {
		return nil, 0, nil
	}
	query := func() *gorm.DB {
		q := t.db.WithContext(ctx).Model(&resourceRow{}).Where("id IN (?)",
			t.db.Model(&referenceRow{}).Select("resource_id").Where("target_id IN ?", targetIDs))
		if len(excludeIDs) > 0 {
			q = q.Where("id NOT IN ?", excludeIDs)
		}
		return q
	}
	var total int64
	if err := query().Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count referrers: %w", err)
	}
	if total == 0 {
		return nil, 0, nil
	}
	var rows []resourceRow
	if err := query().Select(resourceColumns).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list referrers: %w", err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(t.kinds, &rows[i])
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, nil
}
