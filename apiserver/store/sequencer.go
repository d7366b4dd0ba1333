// The change log's sequencer (PostgreSQL): numbers committed changes
// after their commit, so writers need not serialise their commits to
// keep the log's numbers visible in order (schema version 14).

package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

const (
	// sequenceBatch bounds the changes one pass numbers in a transaction.
	sequenceBatch = 5000
	// sequenceSweep is how often the sequencer looks for changes nobody
	// asked it to number: those of a replica that stopped between its
	// commit and its pass.
	sequenceSweep = time.Second
)

// numberSQL gives the unnumbered changes the next numbers, in entry
// order. Its snapshot is taken after the lock: every change committed
// before the pass began is in it.
const numberSQL = `UPDATE resource_changes AS c SET seq = n.base + n.k
	FROM (SELECT entry, row_number() OVER (ORDER BY entry) AS k,
			(SELECT COALESCE(MAX(seq), 0) FROM resource_changes) AS base
		FROM resource_changes WHERE seq IS NULL ORDER BY entry LIMIT ?) AS n
	WHERE c.entry = n.entry`

// sequencer runs the passes of one store: one at a time, each serving
// every writer that asked before it began, so concurrent writers of a
// replica share a pass.
type sequencer struct {
	start sync.Once
	stop  context.CancelFunc
	done  chan struct{}
	kick  chan struct{}

	mu sync.Mutex
	// next is closed when the next pass ends (nil while nobody waits).
	next chan struct{}
}

// awaitNumbered asks for a pass and waits until one that began after the
// call has ended (or ctx ends): the caller's committed changes then have
// their numbers, unless the pass failed, in which case the sweep numbers
// them once the database answers again.
func (s *gormStore) awaitNumbered(ctx context.Context) {
	q := &s.seq
	q.start.Do(s.startSequencer)
	if q.done == nil {
		return // closed before any pass began
	}
	q.mu.Lock()
	if q.next == nil {
		q.next = make(chan struct{})
	}
	ch := q.next
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
	select {
	case <-ch:
	case <-ctx.Done():
	case <-q.done:
	}
}

// startSequencer runs the passes until Close.
func (s *gormStore) startSequencer() {
	q := &s.seq
	ctx, cancel := context.WithCancel(context.Background())
	q.stop, q.done, q.kick = cancel, make(chan struct{}), make(chan struct{}, 1)
	go func() {
		defer close(q.done)
		sweep := time.NewTicker(sequenceSweep)
		defer sweep.Stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-q.kick:
			case <-sweep.C:
			}
			q.mu.Lock()
			waiting := q.next
			q.next = nil
			q.mu.Unlock()
			n, err := s.numberChanges(ctx)
			if waiting != nil {
				close(waiting)
			}
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				s.log.Warn().Err(err).Msg("changes not numbered; watches see them once the database answers again")
				failing = true
			case err == nil && failing:
				s.log.Info().Msg("changes numbered again")
				failing = false
			}
			if n > 0 {
				s.signalChange()
			}
		}
	}()
}

// stopSequencer ends the passes, if they ever started.
func (s *gormStore) stopSequencer() {
	q := &s.seq
	q.start.Do(func() {}) // none may start after Close
	if q.stop != nil {
		q.stop()
		<-q.done
	}
}

// numberChanges numbers every committed change still without a number,
// a batch a transaction, and tells the other replicas' watches. It
// returns how many it numbered.
func (s *gormStore) numberChanges(ctx context.Context) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(changeLockID)).Error; err != nil {
				return fmt.Errorf("lock the change log: %w", err)
			}
			res := tx.Exec(numberSQL, sequenceBatch)
			if res.Error != nil {
				return fmt.Errorf("number the change log: %w", res.Error)
			}
			if n = res.RowsAffected; n == 0 {
				return nil
			}
			if err := tx.Exec("SELECT pg_notify(?, '')", changeChannel).Error; err != nil {
				return fmt.Errorf("notify the change log's listeners: %w", err)
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < sequenceBatch {
			return total, nil
		}
	}
}
