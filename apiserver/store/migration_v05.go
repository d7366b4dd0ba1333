package store

// Schema version 5: resource counts kept with the rows.
var schemaV5 = migration{
	version: 5,
	name:    "resource counts kept with the rows",
	// The total of an unfiltered list of a kind: counting 100,000 rows
	// on every request was most of a first page's cost. Triggers keep
	// the counts in the same transaction as the insert or delete
	// (cascaded deletes of children included), so a total is exact.
	// PostgreSQL spreads a kind over 16 slots by a hash of the id, so
	// concurrent creates do not all wait on one counter row; SQLite
	// has a single writer and uses slot 0. The trigger is created
	// before the counts are filled, in one transaction holding the
	// table's lock, so no concurrent insert is counted twice or never.
	postgres: []string{
		`CREATE TABLE resource_counts (
			kind TEXT NOT NULL,
			slot INTEGER NOT NULL,
			n    BIGINT NOT NULL,
			PRIMARY KEY (kind, slot)
		)`,
		`CREATE FUNCTION resource_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF TG_OP = 'INSERT' THEN
				INSERT INTO resource_counts (kind, slot, n) VALUES (NEW.kind, hashtext(NEW.id) & 15, 1)
					ON CONFLICT (kind, slot) DO UPDATE SET n = resource_counts.n + 1;
			ELSE
				UPDATE resource_counts SET n = n - 1 WHERE kind = OLD.kind AND slot = hashtext(OLD.id) & 15;
			END IF;
			RETURN NULL;
		END
		$$`,
		`LOCK TABLE resources IN SHARE ROW EXCLUSIVE MODE`,
		`CREATE TRIGGER resources_count AFTER INSERT OR DELETE ON resources FOR EACH ROW EXECUTE FUNCTION resource_counts_track()`,
		`INSERT INTO resource_counts (kind, slot, n) SELECT kind, hashtext(id) & 15, count(*) FROM resources GROUP BY 1, 2`,
	},
	sqlite: []string{
		`CREATE TABLE resource_counts (
			kind TEXT NOT NULL,
			slot INTEGER NOT NULL,
			n    INTEGER NOT NULL,
			PRIMARY KEY (kind, slot)
		) WITHOUT ROWID`,
		`CREATE TRIGGER resources_count_insert AFTER INSERT ON resources BEGIN
			INSERT INTO resource_counts (kind, slot, n) VALUES (NEW.kind, 0, 1)
				ON CONFLICT (kind, slot) DO UPDATE SET n = n + 1;
		END`,
		`CREATE TRIGGER resources_count_delete AFTER DELETE ON resources BEGIN
			UPDATE resource_counts SET n = n - 1 WHERE kind = OLD.kind AND slot = 0;
		END`,
		`INSERT INTO resource_counts (kind, slot, n) SELECT kind, 0, count(*) FROM resources WHERE true GROUP BY kind`,
	},
}
