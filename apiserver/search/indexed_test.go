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
		{SQLite, "status.conditions.Ready = true",
			"(resources.id IN (SELECT resource_id FROM resource_terms WHERE term = ?) AND EXISTS (SELECT 1 FROM json_each(resources.conditions) AS c WHERE json_extract(c.value, '$.type') = ? AND json_extract(c.value, '$.status') = ?))",
			[]any{"c:Ready=True", "Ready", "True"}},
		{SQLite, "status.conditions.Ready != 'True'",
			"(NOT EXISTS (SELECT 1 FROM json_each(resources.conditions) AS c WHERE json_extract(c.value, '$.type') = ? AND json_extract(c.value, '$.status') = ?))",
			[]any{"Ready", "True"}},
		{SQLite, "spec['node-pool'].max = 3",
			"(resources.id IN (SELECT resource_id FROM resource_terms WHERE term = ? || CAST(CAST(? AS REAL) AS TEXT)) AND (CASE WHEN (CASE WHEN json_valid(resources.spec) THEN json_type(resources.spec, ?) END) IN ('integer', 'real') THEN json_extract(resources.spec, ?) END) = ?)",
			[]any{`s:$."node-pool".max=n:`, float64(3), `$."node-pool"."max"`, `$."node-pool"."max"`, float64(3)}},
		{Postgres, "spec.platform.type = 'gcp'",
			"(resources.spec_jsonb @> ?::jsonb AND (resources.spec_jsonb #>> ?::text[]) = ?)",
			[]any{`{"platform":{"type":"gcp"}}`, "{platform,type}", "gcp"}},
		{Postgres, "spec.version = '4.1'",
			"((resources.spec_jsonb @> ?::jsonb OR resources.spec_jsonb @> ?::jsonb) AND (resources.spec_jsonb #>> ?::text[]) = ?)",
			[]any{`{"version":"4.1"}`, `{"version":4.1}`, "{version}", "4.1"}},
		// No index filter: negations, ranges, array positions on PostgreSQL.
		{SQLite, "labels.env != 'prod'", "json_extract(resources.labels, ?) IS NOT ?", []any{`$."env"`, "prod"}},
		{Postgres, "spec.zones[0] = 'a'", "(resources.spec_jsonb #>> ?::text[]) = ?", []any{"{zones,0}", "a"}},
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

// TestPlanTerms: which searches SQLite answers from the term index alone,
// with which terms (labels and spec values before statuses) and residual.
func TestPlanTerms(t *testing.T) {
	indexed := Options{Table: "resources", Indexed: true}
	tests := []struct {
		query    string
		terms    string // each term's SQL and values; "" for no plan
		residual string
		// PostgreSQL's plan: its index has no spec terms, so a spec
		// equality is all residual, and spec equalities alone have no
		// plan (its GIN indexes serve them).
		pgTerms, pgResidual string
	}{
		{query: "labels.env = 'prod'", terms: "? [l:env=prod]", pgTerms: "? [l:env=prod]"},
		{query: "status.conditions.Ready = true and labels.env = 'prod'", terms: "? [l:env=prod] | ? [c:Ready=True]",
			pgTerms: "? [l:env=prod] | ? [c:Ready=True]"},
		{query: "status.conditions.Ready = 'False'", terms: "? [c:Ready=False]", pgTerms: "? [c:Ready=False]"},
		{query: "spec.platform.type = 'gcp' and (spec.enabled = true and labels['cost-center'] = 'eng')",
			terms:   "? [s:$.platform.type=t:gcp] | ? [s:$.enabled=b:true] | ? [l:cost-center=eng]",
			pgTerms: "? [l:cost-center=eng]", pgResidual: "((resources.spec_jsonb #>> ?::text[]) = ? AND (resources.spec_jsonb #> ?::text[]) = ?::jsonb) [{platform,type} gcp {enabled} true]"},
		{query: "spec.nodes = 3 and labels.shard = '1'", terms: "? || CAST(CAST(? AS REAL) AS TEXT) [s:$.nodes=n: 3] | ? [l:shard=1]",
			residual: "((CASE WHEN (CASE WHEN json_valid(resources.spec) THEN json_type(resources.spec, ?) END) IN ('integer', 'real') THEN json_extract(resources.spec, ?) END) = ?) [$.\"nodes\" $.\"nodes\" 3]",
			pgTerms:  "? [l:shard=1]", pgResidual: "((CASE WHEN jsonb_typeof(resources.spec_jsonb #> ?::text[]) = 'number' THEN (resources.spec_jsonb #>> ?::text[])::numeric END) = ?) [{nodes} {nodes} 3]"},
		{query: "spec.nodes = 3 and spec.enabled = true", terms: "? || CAST(CAST(? AS REAL) AS TEXT) [s:$.nodes=n: 3] | ? [s:$.enabled=b:true]",
			residual: "((CASE WHEN (CASE WHEN json_valid(resources.spec) THEN json_type(resources.spec, ?) END) IN ('integer', 'real') THEN json_extract(resources.spec, ?) END) = ?) [$.\"nodes\" $.\"nodes\" 3]"},
		// No plan: anything but a conjunction of indexed equalities.
		{query: "labels.env = 'prod' or labels.env = 'dev'"},
		{query: "not (labels.env = 'prod')"},
		{query: "labels.env in ('prod', 'dev')"},
		{query: "labels.env != 'prod'"},
		{query: "spec.nodes > 3 and labels.env = 'prod'"},
		{query: "name = 'x' and labels.env = 'prod'"},
	}
	describe := func(p *TermPlan) (string, string) {
		var terms []string
		for _, term := range p.Terms {
			terms = append(terms, fmt.Sprintf("%s %v", term.SQL, term.Args))
			if strings.Count(term.SQL, "?") != len(term.Args) {
				t.Errorf("term %s: %d placeholders for %d args", term.SQL, strings.Count(term.SQL, "?"), len(term.Args))
			}
		}
		residual := ""
		if p.Residual.SQL != "" {
			residual = fmt.Sprintf("%s %v", p.Residual.SQL, p.Residual.Args)
		}
		return strings.Join(terms, " | "), residual
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			for _, d := range []Dialect{SQLite, Postgres} {
				w, err := Translate(tc.query, d, indexed)
				if err != nil {
					t.Fatalf("Translate: %v", err)
				}
				want, wantResidual := tc.terms, tc.residual
				if d == Postgres {
					want, wantResidual = tc.pgTerms, tc.pgResidual
				}
				if want == "" {
					if w.Plan != nil {
						t.Errorf("dialect %d: plan %+v, want none", d, w.Plan)
					}
					continue
				}
				if w.Plan == nil {
					t.Fatalf("dialect %d: no plan, want terms %s", d, want)
				}
				terms, residual := describe(w.Plan)
				if terms != want {
					t.Errorf("dialect %d: terms\n got %s\nwant %s", d, terms, want)
				}
				if residual != wantResidual {
					t.Errorf("residual\n got %s\nwant %s", residual, wantResidual)
				}
			}
			if w, _ := Translate(tc.query, SQLite, Options{Table: "resources"}); w.Plan != nil {
				t.Errorf("a plan without Options.Indexed")
			}
		})
	}
}
