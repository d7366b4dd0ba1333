package store

// Schema version 6: search terms with conditions, kind and creation time (SQLite).
var schemaV6 = migration{
	version: 6,
	name:    "search terms with conditions, kind and creation time (SQLite)",
	// SQLite's term index gains the condition statuses (c:<Type>=<Status>),
	// and each term row carries its resource's kind and creation time,
	// indexed as (term, kind, created_time, resource_id). A search made
	// only of equalities on labels, conditions and spec fields is then
	// answered from the index alone: its count probes the index, and
	// its page walks one term's rows in the default order and stops at
	// the page's end, instead of checking thousands of stored JSON
	// documents (docs/benchmarks-archive-2026-11-27.md, "Searches answered by the term
	// index"). PostgreSQL keeps its GIN indexes and only gains the
	// condition_terms column.
	postgres: []string{
		// Written on both backends (one row type); only SQLite indexes it.
		`ALTER TABLE resources ADD COLUMN condition_terms JSONB NOT NULL DEFAULT '[]'`,
	},
	sqlite: []string{
		`ALTER TABLE resources ADD COLUMN condition_terms TEXT NOT NULL DEFAULT '[]'`,
		`DROP TRIGGER resources_terms_insert`,
		`DROP TRIGGER resources_terms_labels`,
		`DROP TRIGGER resources_terms_spec`,
		`DROP TABLE resource_terms`,
		`CREATE TABLE resource_terms (
			resource_id  TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
			term         TEXT NOT NULL,
			kind         TEXT NOT NULL,
			created_time DATETIME NOT NULL,
			PRIMARY KEY (resource_id, term)
		) WITHOUT ROWID`,
		`CREATE INDEX resource_terms_term ON resource_terms (term, kind, created_time, resource_id)`,
		`CREATE TRIGGER resources_terms_insert AFTER INSERT ON resources BEGIN
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + labelTermsV6("NEW", "") + `;
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + specTermsV6("NEW", "") + `;
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + conditionTermsV6("NEW") + `;
		END`,
		`CREATE TRIGGER resources_terms_labels AFTER UPDATE OF labels ON resources WHEN OLD.labels IS NOT NEW.labels BEGIN
			DELETE FROM resource_terms WHERE resource_id = NEW.id AND term >= 'l:' AND term < 'l;';
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + labelTermsV6("NEW", "") + `;
		END`,
		`CREATE TRIGGER resources_terms_spec AFTER UPDATE OF spec ON resources WHEN OLD.spec IS NOT NEW.spec BEGIN
			DELETE FROM resource_terms WHERE resource_id = NEW.id AND term >= 's:' AND term < 's;';
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + specTermsV6("NEW", "") + `;
		END`,
		// The condition terms follow condition_terms, which the API
		// computes on every write: almost every status report rewrites
		// conditions (their times), rarely a status, and then the
		// trigger does not run. Rows stored before this version keep
		// '[]' there until their next write; their terms are filled
		// from the conditions below.
		`CREATE TRIGGER resources_terms_conditions AFTER UPDATE OF condition_terms ON resources WHEN OLD.condition_terms IS NOT NEW.condition_terms BEGIN
			DELETE FROM resource_terms WHERE resource_id = NEW.id AND term >= 'c:' AND term < 'c;'
				AND term NOT IN (SELECT value FROM json_each(CASE WHEN json_valid(NEW.condition_terms) THEN NEW.condition_terms ELSE '[]' END));
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + conditionTermsV6("NEW") + `;
		END`,
		`INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + labelTermsV6("r", "resources AS r, "),
		`INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + specTermsV6("r", "resources AS r, "),
		`INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) ` + storedConditionTermsV6,
		// term_stats holds, per term and kind, how many resources hold
		// the term (n) and a version that moves with every gain or loss,
		// both kept by triggers in the same transaction. A search walks
		// its rarest term, a one-term search reads its total from n, and
		// a search's total is kept with the versions of its terms
		// (countCache): equal versions, equal total. Filled here from
		// the terms above, before its triggers exist.
		`CREATE TABLE term_stats (
			term    TEXT NOT NULL,
			kind    TEXT NOT NULL,
			version INTEGER NOT NULL,
			n       INTEGER NOT NULL,
			PRIMARY KEY (term, kind)
		) WITHOUT ROWID`,
		`INSERT INTO term_stats (term, kind, version, n) SELECT term, kind, 0, count(*) FROM resource_terms WHERE true GROUP BY term, kind`,
		`CREATE TRIGGER resource_terms_added AFTER INSERT ON resource_terms BEGIN
			INSERT INTO term_stats (term, kind, version, n) VALUES (NEW.term, NEW.kind, 1, 1)
				ON CONFLICT (term, kind) DO UPDATE SET version = version + 1, n = n + 1;
		END`,
		`CREATE TRIGGER resource_terms_removed AFTER DELETE ON resource_terms BEGIN
			UPDATE term_stats SET version = version + 1, n = n - 1 WHERE term = OLD.term AND kind = OLD.kind;
		END`,
		// Planner statistics of the same shape as version 3's (a term
		// is held by few resources), for the new index.
		`ANALYZE sqlite_schema`,
		`DELETE FROM sqlite_stat1 WHERE tbl = 'resource_terms'`,
		`INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
			('resource_terms', 'resource_terms_term', '1000000 50 50 1 1'),
			('resource_terms', 'resource_terms', '1000000 10 1')`,
		`ANALYZE sqlite_schema`,
	},
}

// The term queries of schema version 6 (SQLite): those of version 3 with
// the row's kind and creation time, and the condition terms. Released
// with version 6: a change is a new version.
func labelTermsV6(row, from string) string {
	return "SELECT " + row + ".id, " + row + ".kind, " + row + ".created_time, 'l:' || j.key || '=' || j.value AS term FROM " + from +
		"json_each(CASE WHEN json_valid(" + row + ".labels) THEN " + row + ".labels ELSE '{}' END) AS j WHERE j.type = 'text'"
}

func specTermsV6(row, from string) string {
	return "SELECT " + row + ".id, " + row + ".kind, " + row + ".created_time, 's:' || j.fullkey || '=' || CASE j.type WHEN 'text' THEN 't:' || j.atom " +
		"WHEN 'true' THEN 'b:true' WHEN 'false' THEN 'b:false' ELSE 'n:' || CAST(CAST(j.atom AS REAL) AS TEXT) END AS term FROM " + from +
		"json_tree(CASE WHEN json_valid(" + row + ".spec) THEN " + row + ".spec ELSE '{}' END) AS j " +
		"WHERE j.type IN ('text', 'integer', 'real', 'true', 'false')"
}

// conditionTermsV6 yields the terms a row's condition_terms lists.
func conditionTermsV6(row string) string {
	return "SELECT " + row + ".id, " + row + ".kind, " + row + ".created_time, j.value FROM " +
		"json_each(CASE WHEN json_valid(" + row + ".condition_terms) THEN " + row + ".condition_terms ELSE '[]' END) AS j WHERE j.type = 'text'"
}

// storedConditionTermsV6 fills the condition terms of the rows stored
// before version 6 from their conditions: c:<type>=<status> for each
// condition whose type and status are text (the API writes nothing else).
const storedConditionTermsV6 = "SELECT r.id, r.kind, r.created_time, " +
	"'c:' || json_extract(j.value, '$.type') || '=' || json_extract(j.value, '$.status') FROM resources AS r, " +
	"json_each(CASE WHEN json_valid(r.conditions) THEN r.conditions ELSE '[]' END) AS j " +
	"WHERE CASE WHEN j.type = 'object' THEN json_type(j.value, '$.type') = 'text' AND json_type(j.value, '$.status') = 'text' ELSE 0 END"
