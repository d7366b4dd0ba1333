// Admissions: the reconcile rounds the relay handed to Temporal and that
// have not started yet (package admission counts them against its window).

package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// Admission is one resource's change handed to Temporal.
type Admission struct {
	ResourceID string
	Generation int64
	At         time.Time
}

// Admissions is the account of rounds in flight, shared by every API
// replica.
type Admissions interface {
	// Admit records changes handed to Temporal; a resource's newer
	// hand-off replaces its older one.
	Admit(ctx context.Context, admitted []Admission) error
	// InFlight counts the rounds admitted since since (older ones are
	// taken as lost: their adapters never reported) that have not started.
	InFlight(ctx context.Context, since time.Time) (int, error)
	// StartedAfter returns how long each round that started after after
	// took from its hand-off, and when the newest of them started.
	StartedAfter(ctx context.Context, after time.Time) ([]time.Duration, time.Time, error)
	// PruneAdmissions forgets rounds that started, or were admitted,
	// before before.
	PruneAdmissions(ctx context.Context, before time.Time) error
	// Queued reports which of the resources have a change waiting in the
	// outbox: not handed to Temporal yet.
	Queued(ctx context.Context, ids []string) (map[string]bool, error)
	// QueuePosition says whether a change of the resource waits in the
	// outbox, and how many changes were written before its oldest.
	QueuePosition(ctx context.Context, resourceID string) (ahead int, waiting bool, err error)
}

type admissionRow struct {
	ResourceID string `gorm:"primaryKey"`
	Generation int64
	AdmittedMS int64
	ReleasedMS *int64
}

func (admissionRow) TableName() string { return "admissions" }

func (s *gormStore) Admit(ctx context.Context, admitted []Admission) error {
	if len(admitted) == 0 {
		return nil
	}
	rows := make([]admissionRow, 0, len(admitted))
	for _, a := range admitted {
		rows = append(rows, admissionRow{ResourceID: a.ResourceID, Generation: a.Generation, AdmittedMS: a.At.UnixMilli()})
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "resource_id"}},
		DoUpdates: clause.Assignments(map[string]any{"generation": clause.Column{Table: "excluded", Name: "generation"}, "admitted_ms": clause.Column{Table: "excluded", Name: "admitted_ms"}, "released_ms": nil}),
	}).Create(&rows).Error
	if err != nil {
		return fmt.Errorf("record %d admissions: %w", len(rows), err)
	}
	return nil
}

func (s *gormStore) InFlight(ctx context.Context, since time.Time) (int, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&admissionRow{}).
		Where("released_ms IS NULL AND admitted_ms >= ?", since.UnixMilli()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count rounds in flight: %w", err)
	}
	return int(n), nil
}

func (s *gormStore) StartedAfter(ctx context.Context, after time.Time) ([]time.Duration, time.Time, error) {
	var rows []admissionRow
	err := s.db.WithContext(ctx).Where("released_ms > ?", after.UnixMilli()).Find(&rows).Error
	if err != nil {
		return nil, after, fmt.Errorf("read started rounds: %w", err)
	}
	out := make([]time.Duration, 0, len(rows))
	newest := after
	for _, r := range rows {
		out = append(out, time.Duration(*r.ReleasedMS-r.AdmittedMS)*time.Millisecond)
		if at := time.UnixMilli(*r.ReleasedMS); at.After(newest) {
			newest = at
		}
	}
	return out, newest, nil
}

func (s *gormStore) PruneAdmissions(ctx context.Context, before time.Time) error {
	ms := before.UnixMilli()
	err := s.db.WithContext(ctx).Where("released_ms < ? OR (released_ms IS NULL AND admitted_ms < ?)", ms, ms).
		Delete(&admissionRow{}).Error
	if err != nil {
		return fmt.Errorf("prune admissions: %w", err)
	}
	return nil
}

func (s *gormStore) Queued(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	var queued []string
	err := s.db.WithContext(ctx).Model(&outboxRow{}).Distinct("resource_id").Where("resource_id IN ?", ids).Pluck("resource_id", &queued).Error
	if err != nil {
		return nil, fmt.Errorf("read queued resources: %w", err)
	}
	for _, id := range queued {
		out[id] = true
	}
	return out, nil
}

func (s *gormStore) QueuePosition(ctx context.Context, resourceID string) (int, bool, error) {
	var first *int64
	err := s.db.WithContext(ctx).Model(&outboxRow{}).Where("resource_id = ?", resourceID).Select("min(id)").Scan(&first).Error
	if err != nil {
		return 0, false, fmt.Errorf("read the outbox of %s: %w", resourceID, err)
	}
	if first == nil {
		return 0, false, nil
	}
	var ahead int64
	if err := s.db.WithContext(ctx).Model(&outboxRow{}).Where("id < ?", *first).Count(&ahead).Error; err != nil {
		return 0, false, fmt.Errorf("count the outbox before %s: %w", resourceID, err)
	}
	return int(ahead), true, nil
}

// StartRound marks the round admitted for a resource at generation or
// before as started: an adapter reported at generation.
func (t *gormTx) StartRound(ctx context.Context, resourceID string, generation int64, at time.Time) error {
	err := t.db.WithContext(ctx).Model(&admissionRow{}).
		Where("resource_id = ? AND generation <= ? AND released_ms IS NULL", resourceID, generation).
		Update("released_ms", at.UnixMilli()).Error
	if err != nil {
		return fmt.Errorf("mark the round of %s started: %w", resourceID, err)
	}
	return nil
}
