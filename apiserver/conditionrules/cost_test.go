package conditionrules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/hyperfleet/hyperfleet/resource"
)

func compileRules(t *testing.T, rules ...resource.ConditionRule) *Set {
	t.Helper()
	kinds, err := resource.NewKinds("", []resource.Kind{{Kind: "Cluster", Plural: "clusters", Conditions: rules}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile("", kinds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// itemsReport is a report whose data holds a list of n strings.
func itemsReport(t *testing.T, n int) []resource.AdapterStatus {
	t.Helper()
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("item-%d", i)
	}
	data, err := json.Marshal(map[string]any{"items": items, "blob": strings.Repeat("x", 4096)})
	if err != nil {
		t.Fatal(err)
	}
	return []resource.AdapterStatus{{Adapter: "lister", ObservedGeneration: 1, Data: data,
		Conditions: []resource.AdapterCondition{{Type: "Available", Status: "True"}}}}
}

const needleRule = `statuses.all(s, !has(s.data.items) || s.data.items.all(i, i != "needle"))`

// A rule that iterates a report's data is bounded by the cost limit: the
// issue's rule over 200,000 items ran for minutes under cel-go's tracker
// (quadratic) and now ends with RuleError after MaxCost units; over 1,000
// items it is well within the limit and satisfied.
func TestCostLimitEndsRunawayRules(t *testing.T) {
	s := compileRules(t, resource.ConditionRule{Type: "NoNeedle", Expression: needleRule})
	small, err := s.Evaluate(context.Background(), "Cluster", 1, itemsReport(t, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if small[0].Status != resource.StatusTrue {
		t.Fatalf("1,000 items: %+v", small[0])
	}
	statuses := itemsReport(t, 200_000)
	out, err := s.Evaluate(context.Background(), "Cluster", 1, statuses)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Reason != ReasonRuleError || !strings.Contains(out[0].Message, fmt.Sprintf("cost limit of %d", MaxCost)) {
		t.Fatalf("200,000 items: %+v", out[0])
	}
	// How long the program ran before the limit stopped it (the figure of
	// docs/reliability.md; asserted through the cost, not the clock).
	big := map[string]any{"statuses": statusValues(statuses), "generation": int64(1)}
	start := time.Now()
	_, exceeded, _ := run(context.Background(), s.byKind["Cluster"][0].prg, big, MaxCost)
	t.Logf("a rule over 200,000 items reached the cost limit of %d after %v (exceeded=%v)", MaxCost, time.Since(start), exceeded)

	// The meter charges what the limit says: under a limit just above the
	// small list's cost it passes, just below it fails.
	vars := map[string]any{"statuses": statusValues(itemsReport(t, 1000)), "generation": int64(1)}
	_, exceeded, err = run(context.Background(), s.byKind["Cluster"][0].prg, vars, math.MaxUint64)
	if exceeded || err != nil {
		t.Fatal(exceeded, err)
	}
	used := cost(t, s.byKind["Cluster"][0].prg, vars)
	if used < 1000 || used > MaxCost {
		t.Fatalf("1,000 items cost %d: each item must cost something, and the whole stay below %d", used, MaxCost)
	}
	if _, exceeded, _ := run(context.Background(), s.byKind["Cluster"][0].prg, vars, used); exceeded {
		t.Errorf("limit %d = the cost: exceeded", used)
	}
	if _, exceeded, _ := run(context.Background(), s.byKind["Cluster"][0].prg, vars, used-1); !exceeded {
		t.Errorf("limit %d below the cost %d: not exceeded", used-1, used)
	}
}

// cost measures what one evaluation charges.
func cost(t *testing.T, prg cel.Program, vars map[string]any) uint64 {
	t.Helper()
	m := &meter{limit: math.MaxUint64 / 2}
	if _, _, err := prg.ContextEval(context.Background(), &activation{vars: vars, meter: m}); err != nil {
		t.Fatal(err)
	}
	return m.used
}

// Every shape of runaway is charged in proportion to its work: nested
// loops, values built per step, containment in a long list. 2,000 items
// of data is small enough that the limit is reached by the work, not by
// reading the list.
func TestCostGrowsWithWork(t *testing.T) {
	statuses := itemsReport(t, 2000)
	vars := map[string]any{"statuses": statusValues(statuses), "generation": int64(1)}
	for _, expr := range []string{
		`statuses.all(s, s.data.items.all(i, s.data.items.all(j, i != "needle")))`,
		`statuses.exists(s, s.data.items.exists(i, i in s.data.items && false))`,
		`statuses.exists(s, s.data.items.map(i, i + s.data.blob).size() == 0)`,
		`statuses.exists(s, s.data.items.filter(i, s.data.blob.contains(i)).size() > 0)`,
		`statuses.exists(s, s.data.items.exists(i, s.data.blob.split("").size() == 0))`,
		`statuses.exists(s, lists.range(100000).size() == 0)`,
	} {
		s := compileRules(t, resource.ConditionRule{Type: "Heavy", Expression: expr})
		out, err := s.Evaluate(context.Background(), "Cluster", 1, statuses)
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Reason != ReasonRuleError || !strings.Contains(out[0].Message, "cost limit") {
			t.Errorf("%s: %+v", expr, out[0])
		}
		start := time.Now()
		_, _, _ = run(context.Background(), s.byKind["Cluster"][0].prg, vars, MaxCost)
		t.Logf("%s: limit reached after %v", expr, time.Since(start))
	}
}

// Evaluation stops with the request: a rule without a cost limit that
// would loop for hours returns the context's error once it is cancelled,
// and a cancelled request evaluates nothing.
func TestEvaluationStopsWithTheRequest(t *testing.T) {
	s := compileRules(t, resource.ConditionRule{Type: "Forever",
		Expression: `statuses.all(s, s.data.items.all(i, s.data.items.all(j, s.data.items.all(k, k != "needle"))))`})
	statuses := itemsReport(t, 10_000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.evaluate(ctx, "Cluster", 1, statuses, math.MaxUint64)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled evaluation returned %v, want context.Canceled", err)
	}
	if _, err := s.Evaluate(ctx, "Cluster", 1, statuses); !errors.Is(err, context.Canceled) {
		t.Fatalf("evaluation under a cancelled context returned %v", err)
	}
}

// The meter changes no result: each expression evaluates to the same value
// (or fails alike) with and without it.
func TestMeteringKeepsResults(t *testing.T) {
	env, err := newEnv()
	if err != nil {
		t.Fatal(err)
	}
	data := json.RawMessage(`{"items":["a","b","c"],"n":3,"m":{"k":"v","x":[1,2,3]},"s":"Hello, World","opt":null,"f":1.5}`)
	statuses := statusValues([]resource.AdapterStatus{
		{Adapter: "one", ObservedGeneration: 2, Data: data, Metadata: json.RawMessage(`{"team":"a"}`),
			Conditions: []resource.AdapterCondition{{Type: "Available", Status: "True", Reason: "Ok"}, {Type: "Ready", Status: "False"}}},
		{Adapter: "two", ObservedGeneration: 1, Conditions: []resource.AdapterCondition{{Type: "Available", Status: "False"}}},
	})
	vars := map[string]any{"statuses": statuses, "generation": int64(2)}
	for _, expr := range []string{
		`statuses.exists(s, s.adapter == "one" && s.observed_generation == generation)`,
		`statuses.all(s, s.conditions.exists(c, c.type == "Available"))`,
		`statuses.exists_one(s, s.conditions.exists(c, c.status == "False"))`,
		`statuses.map(s, s.adapter).join(",") == "one,two"`,
		`statuses.filter(s, s.observed_generation > 1).size() == 1`,
		`statuses.map(s, s.observed_generation > 1, s.adapter) == ["one"]`,
		`has(statuses[0].data.items) && !has(statuses[0].data.absent)`,
		`statuses[0].data.items[1] == "b" && statuses[0].data.items[generation - 1] == "b"`,
		`"b" in statuses[0].data.items && !("z" in statuses[0].data.items)`,
		`statuses[0].data.m.x.map(x, x * 2) == [2, 4, 6]`,
		`statuses[0].data.m.exists(k, k == "x")`,
		`statuses[0].data.s.lowerAscii().contains("world") && statuses[0].data.s.split(", ").size() == 2`,
		`statuses[0].data.s.substring(0, 5) + "!" == "Hello!"`,
		`statuses[0].data.?absent.orValue("none") == "none"`,
		`statuses[0].data.?n.hasValue()`,
		`(statuses[0].data.n > 2 ? statuses[0].data.items : []).size() == 3`,
		`statuses[0].data.f == 1.5 && statuses[0].data.n == 3`,
		`statuses[0].data.opt == null`,
		`statuses[1].data.x == 1`,
		`statuses[0].metadata.team == "a" && statuses[1].metadata == null`,
		`statuses[0].data.items.all(i, i.size() == 1) || statuses[0].data.missing`,
		`lists.range(3) == [0, 1, 2]`,
		`statuses[0].data.items.sort() == ["a", "b", "c"] && statuses[0].data.items.reverse()[0] == "c"`,
		`{"a": statuses.size()}.a == 2`,
		`statuses[5].adapter == "x"`,
		`statuses.size() / 0 == 1`,
	} {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", expr, iss.Err())
		}
		plain, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		metered, err := env.Program(ast, cel.CustomDecoratorV2(meterOperations), cel.InterruptCheckFrequency(interruptEvery))
		if err != nil {
			t.Fatal(err)
		}
		want, _, werr := plain.Eval(vars)
		got, exceeded, gerr := run(context.Background(), metered, vars, MaxCost)
		if exceeded || (werr == nil) != (gerr == nil) || werr == nil && want.Equal(got) != types.True {
			t.Errorf("%s: metered %v (%v), plain %v (%v)", expr, got, gerr, want, werr)
		}
		if werr != nil && gerr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: metered error %q, plain %q", expr, gerr, werr)
		}
	}
}
