// Settings: small key/value pairs the API keeps beside the schema.

package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

func (s *gormStore) GetSetting(ctx context.Context, key string) (string, bool, error) {
	var row settingRow
	err := s.db.WithContext(ctx).Where("key = ?", key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("get setting %s: %w", key, err)
	}
	return row.Value, true, nil
}

func (s *gormStore) PutSetting(ctx context.Context, key, value string) error {
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value"}),
	}).Create(&settingRow{Key: key, Value: value}).Error
	if err != nil {
		return fmt.Errorf("put setting %s: %w", key, err)
	}
	return nil
}
