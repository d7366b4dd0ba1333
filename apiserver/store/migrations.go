package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// migration is one schema version, written once per dialect. Migrations are
// append-only: a released one is never edited, a fix is a new version.
type migration struct {
	version  int
	name     string
	postgres []string
	sqlite   []string
}

var migrations = []migration{
	{
		version: 1,
		name:    "resources, adapter statuses, outbox, settings",
		postgres: []string{
			`CREATE TABLE resources (
				id           TEXT PRIMARY KEY,
				kind         TEXT NOT NULL,
				parent_id    TEXT REFERENCES resources(id) ON DELETE CASCADE,
				name         TEXT NOT NULL,
				generation   BIGINT NOT NULL,
				spec         JSONB NOT NULL,
				labels       JSONB NOT NULL DEFAULT '{}',
				conditions   JSONB NOT NULL DEFAULT '[]',
				created_time TIMESTAMPTZ NOT NULL,
				updated_time TIMESTAMPTZ NOT NULL,
				deleted_time TIMESTAMPTZ,
				created_by   TEXT NOT NULL,
				updated_by   TEXT NOT NULL,
				deleted_by   TEXT NOT NULL DEFAULT ''
			)`,
			// Names are unique among siblings until the resource is removed.
			`CREATE UNIQUE INDEX resources_name_key ON resources (kind, COALESCE(parent_id, ''), name)`,
			`CREATE INDEX resources_kind_created ON resources (kind, created_time DESC, id DESC)`,
			`CREATE INDEX resources_parent ON resources (parent_id) WHERE parent_id IS NOT NULL`,
			// Serve status.conditions.<Type>='True' and labels.<key>='v'
			// searches, which the translator writes as containment (@>).
			`CREATE INDEX resources_conditions ON resources USING GIN (conditions jsonb_path_ops)`,
			`CREATE INDEX resources_labels ON resources USING GIN (labels jsonb_path_ops)`,
			`CREATE TABLE adapter_statuses (
				resource_id         TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
				adapter             TEXT NOT NULL,
				observed_generation BIGINT NOT NULL,
				observed_time       TIMESTAMPTZ NOT NULL,
				conditions          JSONB NOT NULL,
				metadata            JSONB,
				data                JSONB,
				created_time        TIMESTAMPTZ NOT NULL,
				last_report_time    TIMESTAMPTZ NOT NULL,
				PRIMARY KEY (resource_id, adapter)
			)`,
			`CREATE TABLE outbox (
				id           BIGSERIAL PRIMARY KEY,
				kind         TEXT NOT NULL,
				resource_id  TEXT NOT NULL,
				parent_id    TEXT NOT NULL DEFAULT '',
				generation   BIGINT NOT NULL,
				reason       TEXT NOT NULL,
				created_time TIMESTAMPTZ NOT NULL
			)`,
			`CREATE TABLE settings (
				key   TEXT PRIMARY KEY,
				value TEXT NOT NULL
			)`,
		},
		sqlite: []string{
			`CREATE TABLE resources (
				id           TEXT PRIMARY KEY,
				kind         TEXT NOT NULL,
				parent_id    TEXT REFERENCES resources(id) ON DELETE CASCADE,
				name         TEXT NOT NULL,
				generation   INTEGER NOT NULL,
				spec         TEXT NOT NULL,
				labels       TEXT NOT NULL DEFAULT '{}',
				conditions   TEXT NOT NULL DEFAULT '[]',
				created_time DATETIME NOT NULL,
				updated_time DATETIME NOT NULL,
				deleted_time DATETIME,
				created_by   TEXT NOT NULL,
				updated_by   TEXT NOT NULL,
				deleted_by   TEXT NOT NULL DEFAULT ''
			)`,
			`CREATE UNIQUE INDEX resources_name_key ON resources (kind, COALESCE(parent_id, ''), name)`,
			`CREATE INDEX resources_kind_created ON resources (kind, created_time DESC, id DESC)`,
			`CREATE INDEX resources_parent ON resources (parent_id) WHERE parent_id IS NOT NULL`,
			`CREATE TABLE adapter_statuses (
				resource_id         TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
				adapter             TEXT NOT NULL,
				observed_generation INTEGER NOT NULL,
				observed_time       DATETIME NOT NULL,
				conditions          TEXT NOT NULL,
				metadata            TEXT,
				data                TEXT,
				created_time        DATETIME NOT NULL,
				last_report_time    DATETIME NOT NULL,
				PRIMARY KEY (resource_id, adapter)
			)`,
			`CREATE TABLE outbox (
				id           INTEGER PRIMARY KEY AUTOINCREMENT,
				kind         TEXT NOT NULL,
				resource_id  TEXT NOT NULL,
				parent_id    TEXT NOT NULL DEFAULT '',
				generation   INTEGER NOT NULL,
				reason       TEXT NOT NULL,
				created_time DATETIME NOT NULL
			)`,
			`CREATE TABLE settings (
				key   TEXT PRIMARY KEY,
				value TEXT NOT NULL
			)`,
		},
	},
	{
		version: 2,
		name:    "typed references between resources",
		// refs holds a resource's links as [{ref_type, kind, id,
		// parent_id}]; resource_references indexes them by target, so a
		// delete finds the live referrers of a resource without a scan.
		postgres: []string{
			`ALTER TABLE resources ADD COLUMN refs JSONB NOT NULL DEFAULT '[]'`,
			`CREATE TABLE resource_references (
				resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
				ref_type    TEXT NOT NULL,
				target_id   TEXT NOT NULL,
				PRIMARY KEY (resource_id, ref_type, target_id)
			)`,
			`CREATE INDEX resource_references_target ON resource_references (target_id)`,
		},
		sqlite: []string{
			`ALTER TABLE resources ADD COLUMN refs TEXT NOT NULL DEFAULT '[]'`,
			`CREATE TABLE resource_references (
				resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
				ref_type    TEXT NOT NULL,
				target_id   TEXT NOT NULL,
				PRIMARY KEY (resource_id, ref_type, target_id)
			)`,
			`CREATE INDEX resource_references_target ON resource_references (target_id)`,
		},
	},
	{
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
	},
	{
		version: 4,
		name:    "trace context of outbox rows",
		// The W3C traceparent of the request that wrote the row, so the
		// relay's hand-off joins that request's trace. Rows written before
		// the upgrade have none and start a trace of their own.
		postgres: []string{`ALTER TABLE outbox ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`},
		sqlite:   []string{`ALTER TABLE outbox ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`},
	},
	{
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
	},
	{
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
	},
	{
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
	},
	{
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
	},
	{
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
	},
	{
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
	},
	{
		version: 11,
		name:    "admissions: reconcile rounds in flight",
		// The relay's admission control (package admission) counts the
		// rounds handed to Temporal and not yet started: one row per
		// resource, from its hand-off to its first adapter report at the
		// generation handed over (released_ms), kept a little longer so
		// every replica reads how long rounds took to start. Times are
		// Unix milliseconds: compared as numbers on both databases. An
		// index on the outbox's resource finds a resource waiting for
		// admission when it is read.
		postgres: []string{
			`CREATE TABLE admissions (
				resource_id TEXT PRIMARY KEY,
				generation  BIGINT NOT NULL,
				admitted_ms BIGINT NOT NULL,
				released_ms BIGINT
			)`,
			`CREATE INDEX outbox_resource ON outbox (resource_id)`,
		},
		sqlite: []string{
			`CREATE TABLE admissions (
				resource_id TEXT PRIMARY KEY,
				generation  INTEGER NOT NULL,
				admitted_ms INTEGER NOT NULL,
				released_ms INTEGER
			)`,
			`CREATE INDEX outbox_resource ON outbox (resource_id)`,
		},
	},
}

// labelTermsV7 yields a PostgreSQL row's label terms (NEW in the trigger,
// r when filling from "resources AS r, "): l:<key>=<value> for each text
// value. Released with version 7: a change is a new version.
func labelTermsV7(row, from string) string {
	return "SELECT " + row + ".id, 'l:' || l.key || '=' || (l.value #>> '{}'), " + row + ".kind, " + row + ".created_time FROM " + from +
		"jsonb_each(CASE WHEN jsonb_typeof(" + row + ".labels) = 'object' THEN " + row + ".labels ELSE '{}' END) AS l WHERE jsonb_typeof(l.value) = 'string'"
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

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrationLockID serialises migrations of API replicas starting together
// on PostgreSQL (an arbitrary constant: "hyperfleet" in ASCII, truncated).
const migrationLockID = 0x6879706572666c65

func (s *gormStore) Migrate(ctx context.Context) error {
	db := s.db.WithContext(ctx)
	if s.backend == BackendPostgres {
		// A session-level advisory lock must be taken and released on the
		// same connection.
		conn, err := s.sqlDB.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migrate: acquire connection: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockID)); err != nil {
			return fmt.Errorf("migrate: take advisory lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLockID)) //nolint:errcheck
	}
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`).Error; err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var applied []int
	if err := db.Raw("SELECT version FROM schema_migrations ORDER BY version").Scan(&applied).Error; err != nil {
		return fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	done := map[int]bool{}
	for _, v := range applied {
		done[v] = true
		if v > SchemaVersion() {
			return fmt.Errorf("migrate: the database is at schema version %d but this binary only knows up to %d; run a newer hyperfleet", v, SchemaVersion())
		}
	}
	for _, m := range migrations {
		if done[m.version] {
			continue
		}
		stmts := m.postgres
		if s.backend == BackendSQLite {
			stmts = m.sqlite
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			for _, stmt := range stmts {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, time.Now().UTC().Format(time.RFC3339)).Error
		})
		if err != nil {
			return fmt.Errorf("migrate: apply version %d (%s): %w", m.version, m.name, err)
		}
		s.log.Info().Int("version", m.version).Str("migration", m.name).Msg("applied schema migration")
		applied = append(applied, m.version)
	}
	if len(applied) > len(done) && s.backend == BackendSQLite {
		// A SQLite connection that was open while the schema changed runs
		// measurably slower afterwards (status reports at about 60% of
		// the rate of a server started on the migrated file; measured,
		// docs/benchmarks.md): open every connection again.
		s.reopenConnections()
	}
	return nil
}

// reopenConnections closes the pool's idle connections (all of them while
// nothing else runs, as during start-up); the next statements open new
// ones.
func (s *gormStore) reopenConnections() {
	s.sqlDB.SetMaxIdleConns(0)
	s.sqlDB.SetMaxIdleConns(s.maxIdle)
}
