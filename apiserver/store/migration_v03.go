package store

// Schema version 3: indexes for the searchable fields.
var schemaV3 = migration{
	version: 3,
	name:    "indexes for the searchable fields",
	// PostgreSQL serves label and condition equality from the GIN
	// indexes of version 1; spec equality is written as containment
	// too and gets its own. SQLite has no index over JSON values, so
	// triggers keep an inverted index, resource_terms, of every label
	// and spec scalar (see search.termFilter for the term format),
	// filled here for the rows already stored. Conditions are not in
	// it: every status report rewrites them, and keeping their terms
	// cut SQLite's status writes to a third (docs/benchmarks.md).
	postgres: []string{
		`CREATE INDEX resources_spec ON resources USING GIN (spec jsonb_path_ops)`,
		`CREATE INDEX resources_name ON resources (name)`,
	},
	sqlite: append([]string{
		`CREATE TABLE resource_terms (
			resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
			term        TEXT NOT NULL,
			PRIMARY KEY (resource_id, term)
		) WITHOUT ROWID`,
		`CREATE INDEX resource_terms_term ON resource_terms (term, resource_id)`,
		`CREATE INDEX resources_name ON resources (name)`,
		`CREATE TRIGGER resources_terms_insert AFTER INSERT ON resources BEGIN
			INSERT OR IGNORE INTO resource_terms (resource_id, term) ` + labelTermsV3("NEW", "") + `;
			INSERT OR IGNORE INTO resource_terms (resource_id, term) ` + specTermsV3("NEW", "") + `;
		END`,
		`CREATE TRIGGER resources_terms_labels AFTER UPDATE OF labels ON resources WHEN OLD.labels IS NOT NEW.labels BEGIN
			DELETE FROM resource_terms WHERE resource_id = NEW.id AND term >= 'l:' AND term < 'l;';
			INSERT OR IGNORE INTO resource_terms (resource_id, term) ` + labelTermsV3("NEW", "") + `;
		END`,
		`CREATE TRIGGER resources_terms_spec AFTER UPDATE OF spec ON resources WHEN OLD.spec IS NOT NEW.spec BEGIN
			DELETE FROM resource_terms WHERE resource_id = NEW.id AND term >= 's:' AND term < 's;';
			INSERT OR IGNORE INTO resource_terms (resource_id, term) ` + specTermsV3("NEW", "") + `;
		END`,
	},
		`INSERT OR IGNORE INTO resource_terms (resource_id, term) `+labelTermsV3("r", "resources AS r, "),
		`INSERT OR IGNORE INTO resource_terms (resource_id, term) `+specTermsV3("r", "resources AS r, "),
		// Fixed planner statistics: without them SQLite takes kind=?
		// for selective and walks every cluster through
		// resources_kind_created, probing the terms, instead of
		// starting from the few resources that hold a term. The
		// figures only state the shape (two kinds share the table, a
		// term is held by few resources); a later ANALYZE replaces them
		// with measured ones, which keep that shape.
		`ANALYZE sqlite_schema`,
		`DELETE FROM sqlite_stat1 WHERE tbl IN ('resources', 'resource_terms')`,
		`INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
			('resources', 'sqlite_autoindex_resources_1', '100000 1'),
			('resources', 'resources_kind_created', '100000 50000 1 1'),
			('resources', 'resources_name_key', '100000 50000 2 1'),
			('resources', 'resources_name', '100000 2'),
			('resources', 'resources_parent', '100000 4'),
			('resource_terms', 'resource_terms_term', '1000000 50 1'),
			('resource_terms', 'resource_terms', '1000000 10 1')`,
		`ANALYZE sqlite_schema`,
	),
}

// The term queries of schema version 3 (SQLite): the terms of row (NEW in
// a trigger, r when filling from "resources AS r, "). They are part of a
// released migration: a change is a new version that recreates the
// triggers, never an edit here. A document that is not valid JSON yields
// no terms rather than failing the write.
func labelTermsV3(row, from string) string {
	return "SELECT " + row + ".id, 'l:' || j.key || '=' || j.value FROM " + from +
		"json_each(CASE WHEN json_valid(" + row + ".labels) THEN " + row + ".labels ELSE '{}' END) AS j WHERE j.type = 'text'"
}

func specTermsV3(row, from string) string {
	return "SELECT " + row + ".id, 's:' || j.fullkey || '=' || CASE j.type WHEN 'text' THEN 't:' || j.atom " +
		"WHEN 'true' THEN 'b:true' WHEN 'false' THEN 'b:false' ELSE 'n:' || CAST(CAST(j.atom AS REAL) AS TEXT) END FROM " + from +
		"json_tree(CASE WHEN json_valid(" + row + ".spec) THEN " + row + ".spec ELSE '{}' END) AS j " +
		"WHERE j.type IN ('text', 'integer', 'real', 'true', 'false')"
}
