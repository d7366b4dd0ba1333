package store

// Schema version 4: trace context of outbox rows.
var schemaV4 = migration{
	version: 4,
	name:    "trace context of outbox rows",
	// The W3C traceparent of the request that wrote the row, so the
	// relay's hand-off joins that request's trace. Rows written before
	// the upgrade have none and start a trace of their own.
	postgres: []string{`ALTER TABLE outbox ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`},
	sqlite:   []string{`ALTER TABLE outbox ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`},
}
