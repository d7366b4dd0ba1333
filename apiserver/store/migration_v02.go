package store

// Schema version 2: typed references between resources.
var schemaV2 = migration{
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
}
