package store

// Schema version 11: admissions: reconcile rounds in flight.
var schemaV11 = migration{
	version: 11,
	name:    "admissions: reconcile rounds in flight",
	// The relay's admission control (package admission) counts the
	// rounds handed to Temporal and not yet started: one row per
	// resource, from its hand-off to its first adapter report at the
	// generation handed over (released_ms), kept a little longer so
	// every replica reads how long rounds took to start. Times are
	// Unix milliseconds: compared as numbers on both databases. An
	// index on the outbox's resource finds a resource waiting for
	// admission when it is read.
	postgres: []string{
		`CREATE TABLE admissions (
			resource_id TEXT PRIMARY KEY,
			generation  BIGINT NOT NULL,
			admitted_ms BIGINT NOT NULL,
			released_ms BIGINT
		)`,
		`CREATE INDEX outbox_resource ON outbox (resource_id)`,
	},
	sqlite: []string{
		`CREATE TABLE admissions (
			resource_id TEXT PRIMARY KEY,
			generation  INTEGER NOT NULL,
			admitted_ms INTEGER NOT NULL,
			released_ms INTEGER
		)`,
		`CREATE INDEX outbox_resource ON outbox (resource_id)`,
	},
}
