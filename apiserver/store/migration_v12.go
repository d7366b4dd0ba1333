package store

// Schema version 12: documents kept as sent (PostgreSQL).
var schemaV12 = migration{
	version: 12,
	name:    "documents kept as sent (PostgreSQL)",
	// jsonb keeps a number as its numeric value and writes it back in
	// plain decimal: -5e-324 came back as 327 characters and 1E+2 as
	// 100, so a 64 KiB spec of short exponents read back as 387 KB and
	// a page of 100 as 39 MB (docs/benchmarks.md, "Numbers kept as
	// sent"). The caller's documents (a resource's spec, a report's
	// data and metadata, and its conditions with them) become text,
	// holding the bytes the API wrote, as on SQLite. Search keeps
	// jsonb: spec_jsonb is generated from spec and carries the GIN
	// index of version 3 under its old name (search.PostgresSpecColumn
	// names it to the translator), so searches match and plan as
	// before. Labels, conditions, condition terms and references of
	// resources stay jsonb: the API writes them from typed values
	// (strings and integers, which jsonb keeps as written), and their
	// indexes and triggers read jsonb.
	//
	// Rows stored before this version keep jsonb's rendering of their
	// documents (spec::text: numbers in plain decimal, keys in jsonb's
	// order, ", " and ": " between items): the same values, which is
	// all that was kept; their next write stores what it is sent.
	//
	// A trigger whose WHEN reads spec (version 9's) forbids changing
	// its type: it is dropped and created again as it was. Each ALTER
	// rewrites its table once, under an exclusive lock.
	postgres: []string{
		`DROP TRIGGER resources_spec_changed ON resources`,
		`DROP INDEX resources_spec`,
		`ALTER TABLE resources ALTER COLUMN spec TYPE TEXT USING spec::text,
			ADD COLUMN spec_jsonb JSONB GENERATED ALWAYS AS (spec::jsonb) STORED`,
		`CREATE INDEX resources_spec ON resources USING GIN (spec_jsonb jsonb_path_ops)`,
		`CREATE TRIGGER resources_spec_changed AFTER UPDATE OF spec ON resources FOR EACH ROW
			WHEN (OLD.spec IS DISTINCT FROM NEW.spec)
			EXECUTE FUNCTION term_deltas_spec_changed()`,
		`ALTER TABLE adapter_statuses ALTER COLUMN conditions TYPE TEXT USING conditions::text,
			ALTER COLUMN metadata TYPE TEXT USING metadata::text,
			ALTER COLUMN data TYPE TEXT USING data::text`,
		`ANALYZE resources`,
	},
	sqlite: nil, // SQLite has kept every document as text since version 1
}
