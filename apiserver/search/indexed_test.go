package search

import (
	"fmt"
	"strings"
	"testing"
)

func TestTranslateIndexed(t *testing.T) {
	indexed := Options{Table: "resources", Indexed: true}
	tests := []struct {
		dialect Dialect
		query   string
		sql     string
		args    []any
	}{
		{SQLite, "labels.env = 'prod'",
			"(resources.id IN (SELECT resource_id FROM resource_terms WHERE term = ?) AND json_extract(resources.labels, ?) = ?)",
			[]any{"l:env=prod", `$."env"`, "prod"}},
		// No condition terms on SQLite: a condition narrows what other
		// terms selected.
		{SQLite, "status.conditions.Ready = true",
			"EXISTS (SELECT 1 FROM json_each(resources.conditions) AS c WHERE json_extract(c.value, '$.type') = ? AND json_extract(c.value, '$.status') = ?)",
			[]any{"Ready", "True"}},
		{SQLite, "spec['node-pool'].max = 3",
			"(resources.id IN (SELECT resource_id FROM resource_terms WHERE term = ? || CAST(CAST(? AS REAL) AS TEXT)) AND (CASE WHEN (CASE WHEN json_valid(resources.spec) THEN json_type(resources.spec, ?) END) IN ('integer', 'real') THEN json_extract(resources.spec, ?) END) = ?)",
			[]any{`s:$."node-pool".max=n:`, float64(3), `$."node-pool"."max"`, `$."node-pool"."max"`, float64(3)}},
		{Postgres, "spec.platform.type = 'gcp'",
			"(resources.spec @> ?::jsonb AND (resources.spec #>> ?::text[]) = ?)",
			[]any{`{"platform":{"type":"gcp"}}`, "{platform,type}", "gcp"}},
		{Postgres, "spec.version = '4.1'",
			"((resources.spec @> ?::jsonb OR resources.spec @> ?::jsonb) AND (resources.spec #>> ?::text[]) = ?)",
			[]any{`{"version":"4.1"}`, `{"version":4.1}`, "{version}", "4.1"}},
		// No index filter: negations, ranges, array positions on PostgreSQL.
		{SQLite, "labels.env != 'prod'", "json_extract(resources.labels, ?) IS NOT ?", []any{`$."env"`, "prod"}},
		{Postgres, "spec.zones[0] = 'a'", "(resources.spec #>> ?::text[]) = ?", []any{"{zones,0}", "a"}},
		{Postgres, "labels.env = 'prod'", "resources.labels @> ?::jsonb", []any{`{"env":"prod"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			w, err := Translate(tc.query, tc.dialect, indexed)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if w.SQL != tc.sql {
				t.Errorf("SQL\n got %s\nwant %s", w.SQL, tc.sql)
			}
			if fmt.Sprint(w.Args) != fmt.Sprint(tc.args) {
				t.Errorf("args = %v, want %v", w.Args, tc.args)
			}
			if strings.Count(w.SQL, "?") != len(w.Args) {
				t.Errorf("%d placeholders for %d args", strings.Count(w.SQL, "?"), len(w.Args))
			}
		})
	}
}

func TestSQLiteFullKey(t *testing.T) {
	for path, want := range map[string]string{
		"a":         "$.a",
		"a.b2":      "$.a.b2",
		"a-b.c_d":   `$."a-b"."c_d"`,
		"9z":        `$."9z"`,
		"zones.1.x": "$.zones[1].x",
	} {
		if got := SQLiteFullKey(strings.Split(path, ".")); got != want {
			t.Errorf("SQLiteFullKey(%s) = %s, want %s", path, got, want)
		}
	}
}
