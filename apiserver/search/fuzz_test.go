package search

import (
	"strings"
	"testing"
)

// FuzzTranslate feeds arbitrary text to the translator: it must answer with
// a clause or a *search.Error, never panic, and every value must travel as a
// bound parameter (one placeholder per argument).
func FuzzTranslate(f *testing.F) {
	for _, seed := range []string{
		"name='my-cluster'",
		"status.conditions.Ready='True' and labels.environment='production'",
		"labels.environment='dev' or labels.environment='staging'",
		"name in ('a', 'b') and not (generation > 2)",
		"spec.platform.gcp.subnets[0].cidr like '10.%'",
		"labels['cost-center'] != 'eng'",
		"created_time >= '2025-01-01T00:00:00Z' and deleted_time < 2026-01-01",
		"owner_references.id = '0190c0de-0000-7000-8000-000000000000'",
		"name = 'x'' OR ''1''=''1'",
		"len(name) > 3",
		"name ~= '^a.*'",
		"labels.shard = '3' and status.conditions.Ready = true and spec.nodes = 3",
		"spec['node-pool'].enabled = false and (labels.a = 'b' and status.conditions.Available = 'False')",
		"references.wif_config.id in ('a', 'b') and references.id != 'c'",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		for _, d := range []Dialect{Postgres, SQLite} {
			for _, indexed := range []bool{false, true} {
				w, err := Translate(query, d, Options{Table: "resources", OwnerReferences: true, Indexed: indexed})
				if err != nil {
					if _, ok := err.(*Error); !ok {
						t.Fatalf("error of type %T: %v", err, err)
					}
					continue
				}
				if n := strings.Count(w.SQL, "?"); n != len(w.Args) {
					t.Fatalf("%q: %d placeholders, %d args: %s", query, n, len(w.Args), w.SQL)
				}
				if w.Plan == nil {
					continue
				}
				if !indexed || len(w.Plan.Terms) == 0 {
					t.Fatalf("%q: a term plan for dialect %d, indexed %v, with %d terms", query, d, indexed, len(w.Plan.Terms))
				}
				for _, part := range append(w.Plan.Terms, w.Plan.Residual) {
					if n := strings.Count(part.SQL, "?"); n != len(part.Args) {
						t.Fatalf("%q: plan part %s: %d placeholders, %d args", query, part.SQL, n, len(part.Args))
					}
				}
			}
		}
		_, _ = ParseOrder(query, query)
	})
}
