package store

// Schema version 9: spec changes move kept totals (PostgreSQL).
var schemaV9 = migration{
	version: 9,
	name:    "spec changes move kept totals (PostgreSQL)",
	// A search with a spec equality walks its label and condition
	// terms and checks the spec of each row (search.TermPlan's
	// residual). Its kept total is only as good as the versions it is
	// compared with, and a spec change moves no label or condition
	// term; so each change of a stored spec appends a zero delta for
	// the marker term 's:*' of its kind (no term of PostgreSQL's
	// index starts with 's:'), whose version such a total is also
	// kept with. Status reports never write spec; only updates of the
	// resource itself run this.
	postgres: []string{
		`CREATE FUNCTION term_deltas_spec_changed() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO term_deltas (term, kind, n) VALUES ('s:*', NEW.kind, 0);
			RETURN NULL;
		END
		$$`,
		`CREATE TRIGGER resources_spec_changed AFTER UPDATE OF spec ON resources FOR EACH ROW
			WHEN (OLD.spec IS DISTINCT FROM NEW.spec)
			EXECUTE FUNCTION term_deltas_spec_changed()`,
	},
	sqlite: nil, // SQLite's spec terms move with the spec
}
