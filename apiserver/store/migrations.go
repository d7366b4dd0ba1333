package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// migration is one schema version, written once per dialect. Migrations are
// append-only: a released one is never edited, a fix is a new version.
type migration struct {
	version  int
	name     string
	postgres []string
	sqlite   []string
}

// migrations are the schema versions in order, each in a file of its own
// (migration_vNN.go) with the statement builders it was released with.
var migrations = []migration{
	schemaV1,
	schemaV2,
	schemaV3,
	schemaV4,
	schemaV5,
	schemaV6,
	schemaV7,
	schemaV8,
	schemaV9,
	schemaV10,
	schemaV11,
	schemaV12,
	schemaV13,
	schemaV14,
	schemaV15,
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrationLockID serialises migrations of API replicas starting together
// on PostgreSQL (an arbitrary constant: "hyperfleet" in ASCII, truncated).
const migrationLockID = 0x6879706572666c65

func (s *gormStore) Migrate(ctx context.Context) error {
	changed, err := s.migrate(ctx)
	if err != nil {
		return err
	}
	if changed {
		// After the lock's connection is back in the pool, so that it
		// is opened again too. A SQLite connection that was open while
		// the schema changed runs measurably slower afterwards (status
		// reports at about 60% of the rate of a server started on the
		// migrated file; measured, docs/benchmarks.md). A PostgreSQL
		// connection keeps the statements it prepared before, with
		// their parameter types: a report's data bound as jsonb would
		// still be written in jsonb's rendering into the text column of
		// version 12. Open every connection again.
		s.reopenConnections()
	}
	return nil
}

// migrate applies the missing migrations and reports whether it applied
// any.
func (s *gormStore) migrate(ctx context.Context) (bool, error) {
	db := s.db.WithContext(ctx)
	if s.backend == BackendPostgres {
		// A session-level advisory lock must be taken and released on the
		// same connection.
		conn, err := s.sqlDB.Conn(ctx)
		if err != nil {
			return false, fmt.Errorf("migrate: acquire connection: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockID)); err != nil {
			return false, fmt.Errorf("migrate: take advisory lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLockID)) //nolint:errcheck
	}
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`).Error; err != nil {
		return false, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var applied []int
	if err := db.Raw("SELECT version FROM schema_migrations ORDER BY version").Scan(&applied).Error; err != nil {
		return false, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	done := map[int]bool{}
	for _, v := range applied {
		done[v] = true
		if v > SchemaVersion() {
			return false, fmt.Errorf("migrate: the database is at schema version %d but this binary only knows up to %d; run a newer hyperfleet", v, SchemaVersion())
		}
	}
	for _, m := range migrations {
		if done[m.version] {
			continue
		}
		stmts := m.postgres
		if s.backend == BackendSQLite {
			stmts = m.sqlite
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			for _, stmt := range stmts {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, time.Now().UTC().Format(time.RFC3339)).Error
		})
		if err != nil {
			return false, fmt.Errorf("migrate: apply version %d (%s): %w", m.version, m.name, err)
		}
		s.log.Info().Int("version", m.version).Str("migration", m.name).Msg("applied schema migration")
		applied = append(applied, m.version)
	}
	return len(applied) > len(done), nil
}

// reopenConnections closes the pool's idle connections (all of them while
// nothing else runs, as during start-up); the next statements open new
// ones.
func (s *gormStore) reopenConnections() {
	s.sqlDB.SetMaxIdleConns(0)
	s.sqlDB.SetMaxIdleConns(s.maxIdle)
}
