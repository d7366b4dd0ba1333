package store

// Schema version 15: resource counts kept per connection (PostgreSQL).
var schemaV15 = migration{
	version: 15,
	name:    "resource counts kept per connection (PostgreSQL)",
	// Version 5 spread each kind's count over 16 rows by a hash of the
	// resource's id. Each insert holds its row's lock to its commit, so
	// two creates on different connections whose ids hashed alike waited
	// for each other: with 32 connections creating, about half of them
	// waited on that lock, and more so the longer a create's transaction
	// (the change log's row, the outbox's) ran after its insert.
	//
	// A count is the sum of its kind's rows, so which row an insert or a
	// delete updates is free: each now updates the row of its own
	// connection (the backend's pid, 64 rows a kind), so concurrent
	// creates on different connections no longer share one. A delete may
	// take a row below 0; the sum stays exact. Existing rows are kept as
	// they are, and replacing the function is atomic, so no table lock
	// and no recount is needed.
	postgres: []string{
		`CREATE OR REPLACE FUNCTION resource_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF TG_OP = 'INSERT' THEN
				INSERT INTO resource_counts (kind, slot, n) VALUES (NEW.kind, pg_backend_pid() & 63, 1)
					ON CONFLICT (kind, slot) DO UPDATE SET n = resource_counts.n + 1;
			ELSE
				INSERT INTO resource_counts (kind, slot, n) VALUES (OLD.kind, pg_backend_pid() & 63, -1)
					ON CONFLICT (kind, slot) DO UPDATE SET n = resource_counts.n - 1;
			END IF;
			RETURN NULL;
		END
		$$`,
	},
	sqlite: nil, // one writer at a time: its count has one row a kind
}
