package store

// Schema version 10: tenancy of resources.
var schemaV10 = migration{
	version: 10,
	name:    "tenancy of resources",
	// With a tenancy file every resource records the tenancy it was
	// created under, in canonical form (org=acme,project=web), and the
	// outbox row carries it to the relay (the workflow's
	// HyperFleetTenant). Names are unique per tenancy: the same name
	// in two tenancies is fine. Without tenancy every row holds ''.
	// A tenant's list stays on indexes at any fleet size: each tenancy
	// is a term of the term index (t:<tenancy>, written once when the
	// row is stored; a tenancy never changes), so its total is a kept
	// count and its default-order page a walk of its own rows; a
	// search beside it adds its terms. Partial indexes, holding
	// tenants' rows only (nothing without tenancy), serve its other
	// orders (name) and searches that have no term plan.
	postgres: []string{
		`ALTER TABLE resources ADD COLUMN tenant TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE outbox ADD COLUMN tenant TEXT NOT NULL DEFAULT ''`,
		`DROP INDEX resources_name_key`,
		`CREATE UNIQUE INDEX resources_tenant_name_key ON resources (tenant, kind, COALESCE(parent_id, ''), name)`,
		`CREATE INDEX resources_tenant_created ON resources (tenant, kind, created_time DESC, id DESC) WHERE tenant <> ''`,
		`CREATE INDEX resources_tenant_name ON resources (tenant, kind, name, id) WHERE tenant <> ''`,
		`CREATE FUNCTION resource_terms_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO resource_terms (resource_id, term, kind, created_time) VALUES (NEW.id, 't:' || NEW.tenant, NEW.kind, NEW.created_time)
				ON CONFLICT DO NOTHING;
			RETURN NULL;
		END
		$$`,
		`CREATE TRIGGER resources_terms_tenant AFTER INSERT ON resources FOR EACH ROW WHEN (NEW.tenant <> '')
			EXECUTE FUNCTION resource_terms_tenant()`,
	},
	sqlite: []string{
		`ALTER TABLE resources ADD COLUMN tenant TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE outbox ADD COLUMN tenant TEXT NOT NULL DEFAULT ''`,
		`DROP INDEX resources_name_key`,
		`CREATE UNIQUE INDEX resources_tenant_name_key ON resources (tenant, kind, COALESCE(parent_id, ''), name)`,
		`CREATE INDEX resources_tenant_created ON resources (tenant, kind, created_time DESC, id DESC) WHERE tenant <> ''`,
		`CREATE INDEX resources_tenant_name ON resources (tenant, kind, name, id) WHERE tenant <> ''`,
		`CREATE TRIGGER resources_terms_tenant AFTER INSERT ON resources WHEN NEW.tenant <> '' BEGIN
			INSERT OR IGNORE INTO resource_terms (resource_id, kind, created_time, term) VALUES (NEW.id, NEW.kind, NEW.created_time, 't:' || NEW.tenant);
		END`,
		// Planner statistics of version 3's shape for the new indexes:
		// a tenancy holds a small share of the fleet.
		`ANALYZE sqlite_schema`,
		`DELETE FROM sqlite_stat1 WHERE idx IN ('resources_name_key', 'resources_tenant_name_key', 'resources_tenant_created', 'resources_tenant_name')`,
		`INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
			('resources', 'resources_tenant_name_key', '100000 1000 500 2 1'),
			('resources', 'resources_tenant_created', '100000 1000 500 1 1'),
			('resources', 'resources_tenant_name', '100000 1000 500 1 1')`,
		`ANALYZE sqlite_schema`,
	},
}
