package store

// Schema version 8: term counts as appended changes (PostgreSQL).
var schemaV8 = migration{
	version: 8,
	name:    "term counts as appended changes (PostgreSQL)",
	// SQLite's term_stats on PostgreSQL, without its contention. A
	// statement that adds or removes term rows appends one row per
	// term to term_deltas (its count, negative for a removal); it
	// never updates a shared row, so concurrent writers neither wait
	// for nor deadlock with each other. A term's holders are its
	// term_counts row plus its deltas, read in one statement (one
	// snapshot). The API folds the deltas into term_counts in the
	// background (compactTermCounts), one replica at a time, moving
	// the term's version; a term's version and number of deltas
	// change with every change of its holders, which is what a kept
	// total is compared against (countCache).
	postgres: []string{
		`CREATE TABLE term_deltas (
			term TEXT NOT NULL,
			kind TEXT NOT NULL,
			n    INTEGER NOT NULL
		)`,
		`CREATE INDEX term_deltas_term ON term_deltas (term, kind)`,
		// No primary key keeps appends cheap; a full replica identity
		// lets logical replication of every table carry the
		// compaction's deletes (it refuses deletes from a table with
		// none). It costs WAL only under wal_level = logical.
		`ALTER TABLE term_deltas REPLICA IDENTITY FULL`,
		// A row is never deleted: a term's version must not start
		// again at 0, where an earlier total could still be kept.
		`CREATE TABLE term_counts (
			term    TEXT NOT NULL,
			kind    TEXT NOT NULL,
			n       BIGINT NOT NULL,
			version BIGINT NOT NULL,
			PRIMARY KEY (term, kind)
		)`,
		`CREATE FUNCTION term_deltas_added() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO term_deltas (term, kind, n) SELECT term, kind, count(*) FROM added GROUP BY term, kind;
			RETURN NULL;
		END
		$$`,
		`CREATE FUNCTION term_deltas_removed() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO term_deltas (term, kind, n) SELECT term, kind, -count(*) FROM removed GROUP BY term, kind;
			RETURN NULL;
		END
		$$`,
		// Writers wait while the counts are filled, so none is
		// counted twice or never. Removals by cascade (a resource's
		// deletion) fire the statement trigger too.
		`LOCK TABLE resource_terms IN SHARE ROW EXCLUSIVE MODE`,
		`CREATE TRIGGER resource_terms_added AFTER INSERT ON resource_terms REFERENCING NEW TABLE AS added
			FOR EACH STATEMENT EXECUTE FUNCTION term_deltas_added()`,
		`CREATE TRIGGER resource_terms_removed AFTER DELETE ON resource_terms REFERENCING OLD TABLE AS removed
			FOR EACH STATEMENT EXECUTE FUNCTION term_deltas_removed()`,
		`INSERT INTO term_counts (term, kind, n, version) SELECT term, kind, count(*), 0 FROM resource_terms GROUP BY term, kind`,
		`ANALYZE term_counts`,
	},
	sqlite: nil, // SQLite has kept term_stats since version 6
}
