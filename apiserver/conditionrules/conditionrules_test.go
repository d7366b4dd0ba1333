package conditionrules_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver/conditionrules"
	"github.com/hyperfleet/hyperfleet/resource"
)

func compile(t *testing.T, rules ...resource.ConditionRule) *conditionrules.Set {
	t.Helper()
	kinds, err := resource.NewKinds("", []resource.Kind{{Kind: "Cluster", Plural: "clusters", Conditions: rules}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := conditionrules.Compile("", kinds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rules see every report with its conditions, data and generation; a dyn
// result that is not a bool, or a missing field, is RuleError.
func TestEvaluate(t *testing.T) {
	s := compile(t,
		resource.ConditionRule{Type: "Big", Expression: `statuses.exists(s, s.adapter == "sizer" && s.data.nodes > 3)`, Reason: "ManyNodes"},
		resource.ConditionRule{Type: "Current", Expression: `statuses.all(s, s.observed_generation == generation)`},
		resource.ConditionRule{Type: "NotBool", Expression: `statuses[0].data.nodes`},
		resource.ConditionRule{Type: "Missing", Expression: `statuses[0].data.absent == 1`, Message: "custom"},
	)
	statuses := []resource.AdapterStatus{{Adapter: "sizer", ObservedGeneration: 2, Data: json.RawMessage(`{"nodes": 5}`),
		Conditions: []resource.AdapterCondition{{Type: "Available", Status: "True"}}}}
	got := map[string]string{}
	outcomes, err := s.Evaluate(context.Background(), "Cluster", 2, statuses)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outcomes {
		got[o.Type] = string(o.Status) + "/" + o.Reason
		if o.Message == "" {
			t.Errorf("%s has no message", o.Type)
		}
		if o.Type == "NotBool" && !strings.Contains(o.Message, "not a bool") {
			t.Errorf("NotBool message %q", o.Message)
		}
	}
	want := map[string]string{"Big": "True/ManyNodes", "Current": "True/RuleSatisfied", "NotBool": "False/RuleError", "Missing": "False/RuleError"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	if out, _ := s.Evaluate(context.Background(), "Cluster", 3, statuses); out[1].Status != resource.StatusFalse || out[1].Reason != conditionrules.ReasonNotSatisfied {
		t.Errorf("a report of an older generation satisfied Current: %+v", out[1])
	}
	if out, _ := s.Evaluate(context.Background(), "NodePool", 1, statuses); out != nil {
		t.Errorf("a kind without rules got %+v", out)
	}
	var none *conditionrules.Set
	if out, _ := none.Evaluate(context.Background(), "Cluster", 1, nil); out != nil {
		t.Errorf("no rule set evaluated %+v", out)
	}
}
