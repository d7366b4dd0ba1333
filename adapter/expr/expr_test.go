package expr

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var clock = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func engine(t *testing.T) *Engine {
	t.Helper()
	e, err := New(func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func vars() map[string]any {
	return map[string]any{
		"cluster": map[string]any{
			"name": "abc", "generation": int64(3),
			"spec": map[string]any{"tags": []any{"b", "a", "b"}, "pools": []any{
				map[string]any{"name": "p1", "replicas": int64(3)}, map[string]any{"name": "p2", "replicas": int64(1)}}},
			"status": map[string]any{"conditions": []any{
				map[string]any{"type": "Reconciled", "status": "True", "last_transition_time": "2025-06-01T11:50:00Z"},
				map[string]any{"type": "Available", "status": "False", "last_transition_time": "garbage"},
			}},
		},
		"resources": map[string]any{
			"ns": map[string]any{"status": map[string]any{"phase": "Active"}},
			"mw": map[string]any{"statusFeedback": map[string]any{"values": []any{
				map[string]any{"name": "phase", "fieldValue": map[string]any{"type": "String", "string": "Active"}}}}},
		},
		"adapter":     map[string]any{"executionStatus": "success", "resourcesSkipped": false},
		"is_deleting": false,
		"generation":  int64(5),
		"nothing":     nil,
	}
}

func TestEval(t *testing.T) {
	e := engine(t)
	names := []string{"cluster", "resources", "adapter", "is_deleting", "generation", "nothing"}
	tests := []struct {
		expr string
		want any
	}{
		// optional types
		{`resources.?ns.?status.?phase.orValue("")`, "Active"},
		{`resources.?missing.?status.?phase.orValue("none")`, "none"},
		{`resources.?ns.hasValue()`, true},
		{`!resources.?gone.hasValue()`, true},
		{`adapter.?executionError.?phase.orValue("unknown")`, "unknown"},
		{`cluster.?deleted_time.hasValue()`, false},
		// has() and macros
		{`has(resources.ns)`, true},
		{`has(cluster.deleted_time)`, false},
		{`cluster.status.conditions.filter(c, c.type == "Reconciled")[0].status`, "True"},
		{`cluster.status.conditions.exists(c, c.type == "Available" && c.status == "True")`, false},
		{`cluster.spec.pools.map(p, p.name)`, []any{"p1", "p2"}},
		{`cluster.spec.pools.all(p, p.replicas > 0)`, true},
		{`size(cluster.spec.tags)`, int64(3)},
		// lists extension
		{`cluster.spec.tags.distinct().sort()`, []any{"a", "b"}},
		{`cluster.spec.pools.sortBy(p, p.replicas).map(p, p.name)`, []any{"p2", "p1"}},
		{`[[1, 2], [3]].flatten()`, []any{int64(1), int64(2), int64(3)}},
		{`cluster.spec.tags.slice(0, 1)`, []any{"b"}},
		// strings extension
		{`"Hello".lowerAscii() + "-" + cluster.name.upperAscii()`, "hello-ABC"},
		{`"a,b".split(",")`, []any{"a", "b"}},
		{`" x ".trim()`, "x"},
		{`"abc".replace("b", "B")`, "aBc"},
		// numbers, types and conversions
		{`generation`, int64(5)},
		{`generation + 1`, int64(6)},
		{`string(cluster.generation) + "!"`, "3!"},
		{`int("42")`, int64(42)},
		{`cluster.generation > 2`, true},
		{`"gcp" in ["aws", "gcp"]`, true},
		{`nothing == null`, true},
		// time
		{`now()`, "2025-06-01T12:00:00Z"},
		{`(timestamp(now()) - timestamp("2025-06-01T11:55:00Z")).getSeconds() > 240`, true},
		{`timestamp("2025-06-01T11:00:00Z") + duration("1h") == timestamp(now())`, true},
		// helpers from upstream HyperFleet
		{`toJson({"a": [1, "x"]})`, `{"a":[1,"x"]}`},
		{`dig(cluster, "spec.pools.1.name")`, "p2"},
		{`dig(cluster, "spec.pools.9.name")`, nil},
		{`dig(resources, "ns.status.phase")`, "Active"},
		{`conditionStatus(cluster.status.conditions, "Reconciled")`, "True"},
		{`conditionStatus(cluster.status.conditions, "Missing")`, "Unknown"},
		{`conditionAge(cluster.status.conditions, "Reconciled")`, int64(600)},
		{`conditionAge(cluster.status.conditions, "Available")`, int64(-1)},
		{`conditionAge(cluster.status.conditions, "Missing")`, int64(-1)},
		{`stableFor(cluster.status.conditions, "Reconciled", 300)`, true},
		{`stableFor(cluster.status.conditions, "Reconciled", 900)`, false},
		{`stableFor(cluster.status.conditions, "Available", 0)`, false},
		{`statusFeedbackValue(resources.mw.statusFeedback, "phase")`, "Active"},
		{`statusFeedbackValue(resources.mw.statusFeedback.values, "phase")`, "Active"},
		{`statusFeedbackValue(resources.mw.statusFeedback, "nope")`, ""},
		{`triState(true, true)`, "True"},
		{`triState(false, true)`, "False"},
		{`triState(false, false)`, "Unknown"},
		// maps come back as plain Go maps
		{`{"k": resources.ns.status.phase, "n": 1.5}`, map[string]any{"k": "Active", "n": 1.5}},
	}
	for _, tc := range tests {
		p, err := e.Compile(tc.expr, names)
		if err != nil {
			t.Errorf("compile %s: %v", tc.expr, err)
			continue
		}
		got, err := p.Eval(context.Background(), vars())
		if err != nil {
			t.Errorf("eval %s: %v", tc.expr, err)
			continue
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(tc.want)
		if string(gj) != string(wj) {
			t.Errorf("%s = %s, want %s", tc.expr, gj, wj)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	e := engine(t)
	for src, want := range map[string]string{
		`undefinedVar == 1`:      "undeclared reference to 'undefinedVar'",
		`generation ==`:          "Syntax error",
		`nosuchfn(generation)`:   "undeclared reference to 'nosuchfn'",
		`"a" +`:                  "Syntax error",
		`conditionStatus(1)`:     "found no matching overload",
		`resources.?x.orValue(1`: "Syntax error",
	} {
		_, err := e.Compile(src, []string{"generation", "resources"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", src, err, want)
		}
	}
}

func TestCompileOpenDeclaresFreeIdentifiers(t *testing.T) {
	e := engine(t)
	p, err := e.CompileOpen(`status.conditions.filter(c, c.type == "Reconciled").size() > 0 && has(getCluster.deleted_time) == false`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Eval(context.Background(), map[string]any{
		"status":     map[string]any{"conditions": []any{map[string]any{"type": "Reconciled"}}},
		"getCluster": map[string]any{"name": "x"},
	})
	if err != nil || got != true {
		t.Errorf("open eval = %v, %v", got, err)
	}
	if _, err := e.CompileOpen(`a.filter(x, x > 1) +`, nil); err == nil {
		t.Error("syntax error accepted")
	}
}

func TestEvalErrorsAndMissingVariables(t *testing.T) {
	e := engine(t)
	p, _ := e.Compile(`cluster.spec.missing.name`, []string{"cluster"})
	if _, err := p.Eval(context.Background(), vars()); err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Errorf("missing key: %v", err)
	}
	p, _ = e.Compile(`is_deleting == null`, []string{"is_deleting"})
	if got, err := p.Eval(context.Background(), map[string]any{}); err != nil || got != true {
		t.Errorf("unset variable should be null: %v %v", got, err)
	}
	p, _ = e.Compile(`generation`, []string{"generation"})
	if _, err := p.EvalBool(context.Background(), vars()); err == nil || !strings.Contains(err.Error(), "true or false") {
		t.Errorf("non-bool: %v", err)
	}
	p, err := e.Compile(`lists.range(5000).map(x, lists.range(5000).map(y, x * y)).size()`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Error("expensive expression was not cut off by the cost limit")
	}
}

func TestFreeIdentifiers(t *testing.T) {
	e := engine(t)
	parsed, _ := e.base.Parse(`a.b + c.filter(x, x > d).size() + e[0] + {"k": f}.k`)
	got := strings.Join(FreeIdentifiers(parsed.NativeRep().Expr()), ",")
	if got != "a,c,d,e,f" {
		t.Errorf("free identifiers = %s", got)
	}
}
