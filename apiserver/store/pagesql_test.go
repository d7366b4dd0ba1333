package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
)

// A plain list's statement is kept prepared, keyed by its text: the text
// must depend on the request's shape alone, and the values travel as
// arguments.
func TestPlainPageSQLDependsOnShapeOnly(t *testing.T) {
	order := search.WithTieBreak(nil)
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	cases := []struct {
		name string
		a, b ListQuery
		same bool
	}{
		{"first pages of different sizes and offsets",
			ListQuery{Kind: "Cluster", Limit: 20}, ListQuery{Kind: "Cluster", Limit: 100, Offset: 400}, true},
		{"positions with different values",
			ListQuery{Kind: "Cluster", Limit: 20, After: search.Cursor{t1, "a"}},
			ListQuery{Kind: "NodePool", Limit: 5, After: search.Cursor{t2, "zz"}}, true},
		{"a position or none", ListQuery{Kind: "Cluster", Limit: 20}, ListQuery{Kind: "Cluster", Limit: 20, After: search.Cursor{t1, "a"}}, false},
		{"a kind or every kind", ListQuery{Kind: "Cluster", Limit: 20}, ListQuery{Limit: 20}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qa, argsA, err := plainPageSQL(c.a, order)
			if err != nil {
				t.Fatal(err)
			}
			qb, _, err := plainPageSQL(c.b, order)
			if err != nil {
				t.Fatal(err)
			}
			if (qa == qb) != c.same {
				t.Errorf("same text = %v, want %v:\n%s\n%s", qa == qb, c.same, qa, qb)
			}
			// The last two arguments are the limit (one row more than the
			// page, which says whether another follows) and the offset.
			if got := argsA[len(argsA)-2:]; !reflect.DeepEqual(got, []any{c.a.Limit + 1, c.a.Offset}) {
				t.Errorf("limit and offset arguments = %v, want [%d %d]", got, c.a.Limit+1, c.a.Offset)
			}
		})
	}
	if _, _, err := plainPageSQL(ListQuery{Kind: "Cluster", Limit: 1, After: search.Cursor{"not a time", "a"}}, order); err == nil {
		t.Error("a position of the wrong type was accepted")
	}
}
