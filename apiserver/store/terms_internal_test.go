package store

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
)

// TestRarestTermDrives: a term plan walks the term the fewest resources
// hold, the first of equals, and keeps the others' order behind it.
func TestRarestTermDrives(t *testing.T) {
	term := func(s string) search.Where { return search.Where{SQL: "?", Args: []any{s}} }
	p := &search.TermPlan{Terms: []search.Where{term("l:a=1"), term("s:$.b=t:x"), term("c:Ready=True")}}
	for _, tc := range []struct {
		stats []int64 // version, count of holders, per term
		want  []any
	}{
		{[]int64{7, 6250, 3, 14000, 9, 50000}, []any{"l:a=1", "s:$.b=t:x", "c:Ready=True"}},
		{[]int64{7, 6250, 3, 14000, 9, 12}, []any{"c:Ready=True", "l:a=1", "s:$.b=t:x"}},
		{[]int64{7, 500, 3, 40, 9, 40}, []any{"s:$.b=t:x", "l:a=1", "c:Ready=True"}},
		{[]int64{0, 0, 3, 40, 9, 40}, []any{"l:a=1", "s:$.b=t:x", "c:Ready=True"}},
	} {
		walk := drivenBy(p, rarest(tc.stats, len(p.Terms)))
		var got []any
		for _, w := range walk.Terms {
			got = append(got, w.Args[0])
		}
		if len(got) != len(tc.want) || got[0] != tc.want[0] || got[1] != tc.want[1] || got[2] != tc.want[2] {
			t.Errorf("stats %v: walk %v, want %v", tc.stats, got, tc.want)
		}
	}
	if len(p.Terms) != 3 || p.Terms[0].Args[0] != "l:a=1" {
		t.Errorf("drivenBy changed the plan it was given: %v", p.Terms)
	}
}

// TestRarestIgnoresTheSpecMarker: the spec-changes marker's version,
// selected after the terms' pairs, is never taken for a term's count.
func TestRarestIgnoresTheSpecMarker(t *testing.T) {
	p := &search.TermPlan{Terms: []search.Where{{SQL: "?", Args: []any{"l:a=1"}}}, Residual: search.Where{SQL: "x = ?", Args: []any{1}}}
	if n := statsLen(BackendPostgres, p); n != 3 {
		t.Errorf("PostgreSQL with a spec residual: %d stats, want 3 (version, count, marker version)", n)
	}
	if n := statsLen(BackendSQLite, p); n != 2 {
		t.Errorf("SQLite (its residual rechecks a spec term): %d stats, want 2", n)
	}
	if i := rarest([]int64{4, 6250, 0}, 1); i != 0 {
		t.Errorf("rarest of one term and the marker: %d", i)
	}
}

// TestWalksTooFar: a page walks held/total rows per match; past
// defaultMaxSpecWalk for the page the search's SQL form serves it.
func TestWalksTooFar(t *testing.T) {
	for _, tc := range []struct {
		held, total int64
		limit       int
		want        bool
	}{
		{6250, 446, 20, false},  // one shard, Ready, one of 7 node counts: 294 rows
		{50000, 10, 20, true},   // Ready beside a rare spec value: 105,000 rows
		{50000, 250, 20, false}, // 4,200 rows
		{50000, 200, 20, true},  // 5,250 rows
		{50000, 0, 20, false},   // nothing matches: no page is read
		{5000, 1, 0, false},     // a page of none reads one row past
		{5001, 1, 0, true},
	} {
		if got := walksTooFar(tc.held, tc.total, tc.limit, defaultMaxSpecWalk); got != tc.want {
			t.Errorf("held %d, total %d, limit %d: %v, want %v", tc.held, tc.total, tc.limit, got, tc.want)
		}
	}
}
