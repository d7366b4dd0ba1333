package store

// Schema version 14: the change log numbered after commit (PostgreSQL).
var schemaV14 = migration{
	version: 14,
	name:    "change log numbered after commit (PostgreSQL)",
	// Version 13 numbered a change as its transaction wrote it, under an
	// advisory lock held to the commit, so that no number could become
	// visible before a lower one. That lock made every change's commit
	// wait for the one before: with durable commits PostgreSQL could no
	// longer flush several commits at once, and the change log cost most
	// of the API's write rate (docs/benchmarks.md, "Watches").
	//
	// Now a transaction writes its changes without a number (seq NULL)
	// and without the lock; the sequencer (sequencer.go) gives committed
	// changes their numbers afterwards, in one short transaction at a
	// time under that lock, so numbers still become visible in order.
	// entry identifies a row before it has a number, and orders a
	// resource's changes: a later change of a resource is written only
	// after the earlier one committed, so it has the higher entry.
	// Numbers already given are kept; the unique index on seq replaces
	// the primary key (several rows may wait without one).
	postgres: []string{
		`ALTER TABLE resource_changes DROP CONSTRAINT resource_changes_pkey`,
		`ALTER TABLE resource_changes ALTER COLUMN seq DROP DEFAULT, ALTER COLUMN seq DROP NOT NULL`,
		`DROP SEQUENCE IF EXISTS resource_changes_seq_seq`,
		`ALTER TABLE resource_changes ADD COLUMN entry BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY`,
		`CREATE UNIQUE INDEX resource_changes_seq ON resource_changes (seq)`,
		`CREATE INDEX resource_changes_unnumbered ON resource_changes (entry) WHERE seq IS NULL`,
	},
	sqlite: nil, // one writer at a time: a change is numbered as it is written
}
