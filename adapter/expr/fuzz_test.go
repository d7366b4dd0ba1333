package expr

import (
	"context"
	"testing"
	"time"
)

// FuzzEval compiles and evaluates arbitrary expressions over a realistic
// context: errors are fine, panics and hangs are not (the cost limit bounds
// the work).
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		`resources.?ns.?status.?phase.orValue("")`,
		`cluster.status.conditions.filter(c, c.type == "Reconciled")[0].status`,
		`dig(cluster, "spec.pools.0.name") + toJson(adapter)`,
		`stableFor(cluster.status.conditions, "Reconciled", 300) ? triState(true, false) : conditionStatus([], "x")`,
		`timestamp(now()) - timestamp("bad")`,
		`[1,2,3].map(x, x / 0)`,
		`"a".matches("(")`,
		`lists.range(100000).size()`,
		`{"a": 1}[x]`,
	} {
		f.Add(s)
	}
	e, err := New(func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) })
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"cluster", "resources", "adapter", "generation", "x"}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if p, err := e.Compile(src, names); err == nil {
			_, _ = p.Eval(ctx, vars())
		}
		if p, err := e.CompileOpen(src, nil); err == nil {
			_, _ = p.Eval(ctx, vars())
		}
	})
}
