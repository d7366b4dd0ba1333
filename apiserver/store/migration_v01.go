package store

// Schema version 1: resources, adapter statuses, outbox, settings.
var schemaV1 = migration{
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
}
