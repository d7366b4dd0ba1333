package aggregation

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestAwaitingAdmission(t *testing.T) {
	in := []resource.Condition{
		{Type: resource.ConditionReady, Status: resource.StatusFalse, Reason: ReasonAdaptersReconciling},
		{Type: resource.ConditionReconciled, Status: resource.StatusFalse, Reason: ReasonAdaptersReconciling},
		{Type: resource.ConditionAvailable, Status: resource.StatusTrue, Reason: ReasonResourceAvailable},
		{Type: "ValidationSuccessful", Status: resource.StatusFalse, Reason: ReasonAwaitingAdapters},
	}
	cases := []struct {
		name string
		in   []resource.Condition
		want []string // reasons, in order
	}{
		{"not Reconciled: Ready and Reconciled say so", in,
			[]string{ReasonAwaitingAdmission, ReasonAwaitingAdmission, ReasonResourceAvailable, ReasonAwaitingAdapters}},
		{"a True condition keeps its reason",
			[]resource.Condition{{Type: resource.ConditionReady, Status: resource.StatusTrue, Reason: ReasonResourceReady}},
			[]string{ReasonResourceReady}},
		{"no conditions", nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := AwaitingAdmission(c.in)
			if len(got) != len(c.want) {
				t.Fatalf("%d conditions, want %d", len(got), len(c.want))
			}
			for i := range got {
				if got[i].Reason != c.want[i] {
					t.Errorf("condition %s: reason %q, want %q", got[i].Type, got[i].Reason, c.want[i])
				}
			}
		})
	}
	if in[0].Reason != ReasonAdaptersReconciling {
		t.Error("the input was changed: stored conditions must stay as they are")
	}
}
