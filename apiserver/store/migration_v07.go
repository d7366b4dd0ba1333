package store

// Schema version 7: search terms of labels and conditions (PostgreSQL).
var schemaV7 = migration{
	version: 7,
	name:    "search terms of labels and conditions (PostgreSQL)",
	// PostgreSQL gains SQLite's term index for labels and condition
	// statuses, as a B-tree: a GIN index is lossy for containment and
	// cannot count without reading every matching row, so a search's
	// total cost as much as its matches. Here a search of and-joined
	// label and condition equalities is counted from the index alone,
	// and its page walks one term's rows in the default order and stops
	// when full (docs/benchmarks-archive-2026-11-27.md, "The term index on PostgreSQL").
	// Spec values stay on their GIN index: PostgreSQL compares them by
	// its own rules (a quoted '3' matches the number 3), which a term
	// cannot render. Triggers keep the terms in the same transaction as
	// the row; the table's lock keeps writers out while it is filled.
	postgres: []string{
		`CREATE TABLE resource_terms (
			resource_id  TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
			term         TEXT NOT NULL,
			kind         TEXT NOT NULL,
			created_time TIMESTAMPTZ NOT NULL,
			PRIMARY KEY (resource_id, term)
		)`,
		`CREATE INDEX resource_terms_term ON resource_terms (term, kind, created_time, resource_id)`,
		`CREATE FUNCTION resource_terms_write() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE
			labels_changed     boolean := true;
			conditions_changed boolean := true;
			conditions         text[];
		BEGIN
			IF TG_OP = 'UPDATE' THEN
				labels_changed := OLD.labels IS DISTINCT FROM NEW.labels;
				conditions_changed := OLD.condition_terms IS DISTINCT FROM NEW.condition_terms;
			END IF;
			IF labels_changed THEN
				IF TG_OP = 'UPDATE' THEN
					DELETE FROM resource_terms WHERE resource_id = NEW.id AND starts_with(term, 'l:');
				END IF;
				INSERT INTO resource_terms (resource_id, term, kind, created_time) ` + labelTermsV7("NEW", "") + `
					ON CONFLICT DO NOTHING;
			END IF;
			IF conditions_changed THEN
				conditions := ARRAY(SELECT e.x #>> '{}' FROM jsonb_array_elements(
					CASE WHEN jsonb_typeof(NEW.condition_terms) = 'array' THEN NEW.condition_terms ELSE '[]' END) AS e(x)
					WHERE jsonb_typeof(e.x) = 'string');
				IF TG_OP = 'UPDATE' THEN
					DELETE FROM resource_terms WHERE resource_id = NEW.id AND starts_with(term, 'c:') AND term <> ALL (conditions);
				END IF;
				INSERT INTO resource_terms (resource_id, term, kind, created_time)
					SELECT NEW.id, c.term, NEW.kind, NEW.created_time FROM unnest(conditions) AS c(term)
					ON CONFLICT DO NOTHING;
			END IF;
			RETURN NULL;
		END
		$$`,
		`LOCK TABLE resources IN SHARE ROW EXCLUSIVE MODE`,
		`CREATE TRIGGER resources_terms_insert AFTER INSERT ON resources FOR EACH ROW EXECUTE FUNCTION resource_terms_write()`,
		// Most status reports rewrite conditions but no status; their
		// condition_terms are unchanged and the trigger is not called.
		`CREATE TRIGGER resources_terms_update AFTER UPDATE OF labels, condition_terms ON resources FOR EACH ROW
			WHEN (OLD.labels IS DISTINCT FROM NEW.labels OR OLD.condition_terms IS DISTINCT FROM NEW.condition_terms)
			EXECUTE FUNCTION resource_terms_write()`,
		`INSERT INTO resource_terms (resource_id, term, kind, created_time) ` + labelTermsV7("r", "resources AS r, ") + ` ON CONFLICT DO NOTHING`,
		// Rows written before version 6 have no condition_terms yet (an
		// empty list); their terms come from the conditions, as the API
		// computes condition_terms, and the next write that lists them
		// keeps them.
		`INSERT INTO resource_terms (resource_id, term, kind, created_time)
			SELECT r.id, 'c:' || (c.x ->> 'type') || '=' || (c.x ->> 'status'), r.kind, r.created_time
			FROM resources AS r, jsonb_array_elements(CASE WHEN jsonb_typeof(r.conditions) = 'array' THEN r.conditions ELSE '[]' END) AS c(x)
			WHERE jsonb_typeof(c.x) = 'object' AND jsonb_typeof(c.x -> 'type') = 'string' AND jsonb_typeof(c.x -> 'status') = 'string'
			ON CONFLICT DO NOTHING`,
		`ANALYZE resource_terms`,
	},
	sqlite: nil, // SQLite has had its term index since version 6
}

// labelTermsV7 yields a PostgreSQL row's label terms (NEW in the trigger,
// r when filling from "resources AS r, "): l:<key>=<value> for each text
// value. Released with version 7: a change is a new version.
func labelTermsV7(row, from string) string {
	return "SELECT " + row + ".id, 'l:' || l.key || '=' || (l.value #>> '{}'), " + row + ".kind, " + row + ".created_time FROM " + from +
		"jsonb_each(CASE WHEN jsonb_typeof(" + row + ".labels) = 'object' THEN " + row + ".labels ELSE '{}' END) AS l WHERE jsonb_typeof(l.value) = 'string'"
}
