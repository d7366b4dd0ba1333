package store

// Schema version 13: the change log that watches read.
var schemaV13 = migration{
	version: 13,
	name:    "resource change log for watches",
	// One row per change of a resource (created, changed, removed),
	// written in the transaction of the change, with the resource as it
	// stood after it. seq is the change's resource version: it only
	// grows (AUTOINCREMENT on SQLite never reuses a pruned number) and,
	// since writers take the log's lock before they number their rows
	// (changes.go), no row becomes visible after a row with a higher
	// seq. The columns are named as resources' are, so a list's
	// translated search runs unchanged against a change (the table read
	// as "resources"); on PostgreSQL spec is text, kept as sent, with
	// the jsonb column search reads generated from it, as version 12
	// made resources'. changed_ms (Unix milliseconds) drives pruning.
	postgres: []string{
		`CREATE TABLE resource_changes (
			seq          BIGSERIAL PRIMARY KEY,
			type         TEXT NOT NULL,
			changed_ms   BIGINT NOT NULL,
			id           TEXT NOT NULL,
			kind         TEXT NOT NULL,
			parent_id    TEXT,
			name         TEXT NOT NULL,
			generation   BIGINT NOT NULL,
			spec         TEXT NOT NULL,
			spec_jsonb   JSONB GENERATED ALWAYS AS (spec::jsonb) STORED,
			labels       JSONB NOT NULL,
			conditions   JSONB NOT NULL,
			refs         JSONB NOT NULL,
			created_time TIMESTAMPTZ NOT NULL,
			updated_time TIMESTAMPTZ NOT NULL,
			deleted_time TIMESTAMPTZ,
			created_by   TEXT NOT NULL,
			updated_by   TEXT NOT NULL,
			deleted_by   TEXT NOT NULL,
			tenant       TEXT NOT NULL
		)`,
		`CREATE INDEX resource_changes_changed ON resource_changes (changed_ms)`,
	},
	sqlite: []string{
		`CREATE TABLE resource_changes (
			seq          INTEGER PRIMARY KEY AUTOINCREMENT,
			type         TEXT NOT NULL,
			changed_ms   INTEGER NOT NULL,
			id           TEXT NOT NULL,
			kind         TEXT NOT NULL,
			parent_id    TEXT,
			name         TEXT NOT NULL,
			generation   INTEGER NOT NULL,
			spec         TEXT NOT NULL,
			labels       TEXT NOT NULL,
			conditions   TEXT NOT NULL,
			refs         TEXT NOT NULL,
			created_time DATETIME NOT NULL,
			updated_time DATETIME NOT NULL,
			deleted_time DATETIME,
			created_by   TEXT NOT NULL,
			updated_by   TEXT NOT NULL,
			deleted_by   TEXT NOT NULL,
			tenant       TEXT NOT NULL
		)`,
		`CREATE INDEX resource_changes_changed ON resource_changes (changed_ms)`,
	},
}
