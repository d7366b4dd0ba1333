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
		walk := drivenBy(p, rarest(tc.stats))
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
