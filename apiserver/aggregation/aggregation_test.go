package aggregation

import (
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

var (
	t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
	t2 = t0.Add(2 * time.Minute)
)

// report builds a stored adapter status; extra pairs add conditions
// ("Finalized", "True").
func report(adapter string, gen int64, available resource.ConditionStatus, extra ...string) resource.AdapterStatus {
	st := resource.AdapterStatus{
		Adapter: adapter, ObservedGeneration: gen, LastReportTime: t1,
		Conditions: []resource.AdapterCondition{
			{Type: "Available", Status: available, Reason: "R" + string(available)},
			{Type: "Applied", Status: "True"},
			{Type: "Health", Status: "True"},
		},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		st.Conditions = append(st.Conditions, resource.AdapterCondition{Type: extra[i], Status: resource.ConditionStatus(extra[i+1])})
	}
	return st
}

func prevAvailable(status resource.ConditionStatus, gen int64, reason string) []resource.Condition {
	return []resource.Condition{{
		Type: "Available", Status: status, ObservedGeneration: gen, Reason: reason,
		Message: "previous", CreatedTime: t0, LastTransitionTime: t0, LastUpdatedTime: t0,
	}}
}

type want struct {
	status resource.ConditionStatus
	reason string
	gen    int64
}

func TestCompute(t *testing.T) {
	two := []string{"validation", "landing-zone"}
	tests := []struct {
		name      string
		in        Input
		ready     want
		available want
		removable bool
	}{
		{
			name:      "created: both pairs AwaitingAdapters at generation 0",
			in:        Input{Kind: "Cluster", Generation: 1, Registered: two},
			ready:     want{"False", ReasonAwaitingAdapters, 0},
			available: want{"False", ReasonAwaitingAdapters, 0},
		},
		{
			name: "every registered adapter Available=True at the current generation: Ready",
			in: Input{Kind: "Cluster", Generation: 1, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 1, "True"), report("landing-zone", 1, "True")}},
			ready:     want{"True", ReasonResourceReady, 1},
			available: want{"True", ReasonResourceAvailable, 1},
		},
		{
			name: "one adapter not yet reported: not Ready, Available still awaiting",
			in: Input{Kind: "Cluster", Generation: 1, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 1, "True")}},
			ready:     want{"False", ReasonAdaptersReconciling, 1},
			available: want{"False", ReasonAwaitingAdapters, 0},
		},
		{
			name: "one adapter Available=False at the current generation",
			in: Input{Kind: "Cluster", Generation: 1, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 1, "True"), report("landing-zone", 1, "False")}},
			ready:     want{"False", ReasonAdaptersUnavailable, 1},
			available: want{"False", ReasonAdaptersUnavailable, 1},
		},
		{
			name: "after a spec change Ready turns False, Available keeps the last known good generation",
			in: Input{Kind: "Cluster", Generation: 2, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 1, "True"), report("landing-zone", 1, "True")},
				Previous: prevAvailable("True", 1, ReasonResourceAvailable)},
			ready:     want{"False", ReasonAdaptersReconciling, 2},
			available: want{"True", ReasonResourceAvailable, 1},
		},
		{
			name: "seed 001: True at gen 1, one adapter reports False at gen 1 -> False",
			in: Input{Kind: "Cluster", Generation: 1, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 1, "False"), report("landing-zone", 1, "True")},
				Previous: prevAvailable("True", 1, ReasonResourceAvailable)},
			ready:     want{"False", ReasonAdaptersUnavailable, 1},
			available: want{"False", ReasonAdaptersUnavailable, 1},
		},
		{
			name: "seed 001: True at gen 1, one adapter reports False at gen 2 -> stays True",
			in: Input{Kind: "Cluster", Generation: 2, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 2, "False"), report("landing-zone", 1, "True")},
				Previous: prevAvailable("True", 1, ReasonResourceAvailable)},
			ready:     want{"False", ReasonAdaptersUnavailable, 2},
			available: want{"True", "previous-kept", 1},
		},
		{
			name: "mixed generations keep a previous False",
			in: Input{Kind: "Cluster", Generation: 3, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 3, "True"), report("landing-zone", 2, "True")},
				Previous: prevAvailable("False", 2, ReasonAdaptersUnavailable)},
			ready:     want{"False", ReasonAdaptersReconciling, 3},
			available: want{"False", "previous-kept", 2},
		},
		{
			name: "all adapters catch up at gen 2 with True -> Available moves to gen 2",
			in: Input{Kind: "Cluster", Generation: 2, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 2, "True"), report("landing-zone", 2, "True")},
				Previous: prevAvailable("True", 1, ReasonResourceAvailable)},
			ready:     want{"True", ReasonResourceReady, 2},
			available: want{"True", ReasonResourceAvailable, 2},
		},
		{
			name: "a newly registered adapter after having been True keeps Available",
			in: Input{Kind: "Cluster", Generation: 1, Registered: []string{"validation", "landing-zone", "dns"},
				Statuses: []resource.AdapterStatus{report("validation", 1, "True"), report("landing-zone", 1, "True")},
				Previous: prevAvailable("True", 1, ReasonResourceAvailable)},
			ready:     want{"False", ReasonAdaptersReconciling, 1},
			available: want{"True", "previous-kept", 1},
		},
		{
			name: "first report with Available=Unknown does not count",
			in: Input{Kind: "Cluster", Generation: 1, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 1, "True"), report("landing-zone", 1, "Unknown")}},
			ready:     want{"False", ReasonAdaptersReconciling, 1},
			available: want{"False", ReasonAwaitingAdapters, 0},
		},
		{
			name: "reports from unregistered adapters are ignored",
			in: Input{Kind: "Cluster", Generation: 1, Registered: []string{"validation"},
				Statuses: []resource.AdapterStatus{report("validation", 1, "True"), report("rogue", 1, "False")}},
			ready:     want{"True", ReasonResourceReady, 1},
			available: want{"True", ReasonResourceAvailable, 1},
		},
		{
			name:      "no registered adapters: never Ready",
			in:        Input{Kind: "NodePool", Generation: 1, Statuses: []resource.AdapterStatus{report("x", 1, "True")}},
			ready:     want{"False", ReasonNoAdaptersRegistered, 0},
			available: want{"False", ReasonNoAdaptersRegistered, 0},
		},
		{
			name: "deleting: Available=True is not enough, Finalized is required",
			in: Input{Kind: "Cluster", Generation: 2, Deleting: true, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 2, "True"), report("landing-zone", 2, "True")}},
			ready:     want{"False", ReasonAwaitingFinalization, 2},
			available: want{"True", ReasonResourceAvailable, 2},
		},
		{
			name: "deleting: Finalized at an older generation does not count",
			in: Input{Kind: "Cluster", Generation: 3, Deleting: true, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 3, "False", "Finalized", "True"), report("landing-zone", 2, "False", "Finalized", "True")}},
			ready:     want{"False", ReasonAwaitingFinalization, 3},
			available: want{"False", ReasonAwaitingAdapters, 0},
		},
		{
			name: "deleting: every adapter Finalized at the current generation -> removable",
			in: Input{Kind: "Cluster", Generation: 2, Deleting: true, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 2, "False", "Finalized", "True"), report("landing-zone", 2, "False", "Finalized", "True")}},
			ready:     want{"True", ReasonFinalized, 2},
			available: want{"False", ReasonAdaptersUnavailable, 2},
			removable: true,
		},
		{
			name: "deleting cluster with node pools left is not removable",
			in: Input{Kind: "Cluster", Generation: 2, Deleting: true, Children: 1, Registered: two,
				Statuses: []resource.AdapterStatus{report("validation", 2, "False", "Finalized", "True"), report("landing-zone", 2, "False", "Finalized", "True")}},
			ready:     want{"False", ReasonAwaitingChildren, 2},
			available: want{"False", ReasonAdaptersUnavailable, 2},
		},
		{
			name:      "deleting with no registered adapters is removable at once",
			in:        Input{Kind: "NodePool", Generation: 2, Deleting: true},
			ready:     want{"False", ReasonNoAdaptersRegistered, 0},
			available: want{"False", ReasonNoAdaptersRegistered, 0},
			removable: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = t2
			res := Compute(tc.in)
			check(t, res.Conditions, "Ready", tc.ready)
			check(t, res.Conditions, "Reconciled", tc.ready)
			check(t, res.Conditions, "Available", tc.available)
			check(t, res.Conditions, "LastKnownReconciled", tc.available)
			if res.Removable != tc.removable {
				t.Errorf("Removable = %v, want %v", res.Removable, tc.removable)
			}
			if got, wantN := len(res.Conditions), 4+len(tc.in.Registered); got != wantN {
				t.Errorf("%d conditions, want %d", got, wantN)
			}
		})
	}
}

func check(t *testing.T, conds []resource.Condition, typ string, w want) {
	t.Helper()
	c, ok := resource.FindCondition(conds, typ)
	if !ok {
		t.Fatalf("condition %s missing", typ)
	}
	reason := c.Reason
	if c.Message == "previous" {
		reason = "previous-kept"
	}
	if c.Status != w.status || reason != w.reason || c.ObservedGeneration != w.gen {
		t.Errorf("%s = %s/%s/gen %d (%q), want %s/%s/gen %d", typ, c.Status, reason, c.ObservedGeneration, c.Message, w.status, w.reason, w.gen)
	}
}

func TestComputePerAdapterConditions(t *testing.T) {
	st := report("landing-zone", 3, "False")
	st.Conditions[0].Reason, st.Conditions[0].Message = "NamespaceNotReady", "namespace pending"
	res := Compute(Input{Kind: "Cluster", Generation: 3, Registered: []string{"landing-zone", "validation"},
		Statuses: []resource.AdapterStatus{st}, Now: t2})

	lz, ok := resource.FindCondition(res.Conditions, "LandingZoneSuccessful")
	if !ok || lz.Status != "False" || lz.ObservedGeneration != 3 || lz.Reason != "NamespaceNotReady" || lz.Message != "namespace pending" {
		t.Errorf("LandingZoneSuccessful = %+v, want a mirror of the adapter's Available at generation 3", lz)
	}
	if !lz.LastUpdatedTime.Equal(t1) {
		t.Errorf("LandingZoneSuccessful.last_updated_time = %v, want the adapter's last report %v", lz.LastUpdatedTime, t1)
	}
	v, ok := resource.FindCondition(res.Conditions, "ValidationSuccessful")
	if !ok || v.Status != "False" || v.Reason != ReasonAwaitingAdapters || v.ObservedGeneration != 0 {
		t.Errorf("ValidationSuccessful = %+v, want False/AwaitingAdapters", v)
	}
}

func TestComputeTimestamps(t *testing.T) {
	registered := []string{"a"}
	first := Compute(Input{Kind: "Cluster", Generation: 1, Registered: registered, Now: t0}).Conditions
	for _, c := range first {
		if !c.CreatedTime.Equal(t0) || !c.LastTransitionTime.Equal(t0) || !c.LastUpdatedTime.Equal(t0) {
			t.Fatalf("%s timestamps = %+v, want all %v", c.Type, c, t0)
		}
	}

	// Same status again: transition time kept; last_updated_time follows the report.
	notAvailable := report("a", 1, "False")
	second := Compute(Input{Kind: "Cluster", Generation: 1, Registered: registered, Statuses: []resource.AdapterStatus{notAvailable}, Previous: first, Now: t2}).Conditions
	ready, _ := resource.FindCondition(second, "Ready")
	if !ready.LastTransitionTime.Equal(t0) || !ready.CreatedTime.Equal(t0) || !ready.LastUpdatedTime.Equal(t1) {
		t.Errorf("Ready after unchanged status: %+v, want transition/created %v, updated %v", ready, t0, t1)
	}

	// Status flips: transition time moves to now, created time stays.
	available := report("a", 1, "True")
	third := Compute(Input{Kind: "Cluster", Generation: 1, Registered: registered, Statuses: []resource.AdapterStatus{available}, Previous: second, Now: t2.Add(time.Hour)}).Conditions
	ready, _ = resource.FindCondition(third, "Ready")
	if ready.Status != "True" || !ready.LastTransitionTime.Equal(t2.Add(time.Hour)) || !ready.CreatedTime.Equal(t0) {
		t.Errorf("Ready after flip: %+v", ready)
	}
}

func TestComputeLastUpdatedIsOldestReport(t *testing.T) {
	a, b := report("a", 1, "True"), report("b", 1, "True")
	a.LastReportTime, b.LastReportTime = t2, t1
	res := Compute(Input{Kind: "Cluster", Generation: 1, Registered: []string{"a", "b"}, Statuses: []resource.AdapterStatus{a, b}, Now: t2})
	ready, _ := resource.FindCondition(res.Conditions, "Ready")
	if !ready.LastUpdatedTime.Equal(t1) {
		t.Errorf("Ready.last_updated_time = %v, want the oldest report %v", ready.LastUpdatedTime, t1)
	}
}

func TestComputeDropsConditionsOfUnregisteredAdapters(t *testing.T) {
	prev := Compute(Input{Kind: "Cluster", Generation: 1, Registered: []string{"a", "gone"}, Now: t0}).Conditions
	res := Compute(Input{Kind: "Cluster", Generation: 1, Registered: []string{"a"}, Previous: prev, Now: t1})
	if _, ok := resource.FindCondition(res.Conditions, "GoneSuccessful"); ok {
		t.Error("GoneSuccessful kept after the adapter was unregistered")
	}
}

func TestConditionTypeForAdapter(t *testing.T) {
	for in, want := range map[string]string{
		"validation":   "ValidationSuccessful",
		"landing-zone": "LandingZoneSuccessful",
		"cl-job":       "ClJobSuccessful",
		"np_configmap": "NpConfigmapSuccessful",
		"dns2":         "Dns2Successful",
	} {
		if got := ConditionTypeForAdapter(in); got != want {
			t.Errorf("ConditionTypeForAdapter(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoAdaptersMessageNamesVariable(t *testing.T) {
	res := Compute(Input{Kind: "NodePool", Generation: 1, Now: t0})
	ready, _ := resource.FindCondition(res.Conditions, "Ready")
	if !strings.Contains(ready.Message, "HYPERFLEET_NODEPOOL_ADAPTERS") {
		t.Errorf("message %q does not say what to set", ready.Message)
	}
}

// Rule outcomes become conditions after the fixed ones, at the resource's
// generation, with transition times kept while the status holds.
func TestRuleOutcomesBecomeConditions(t *testing.T) {
	in := Input{Kind: resource.KindCluster, Generation: 3, Registered: []string{"a"}, Now: t0,
		Rules: []RuleOutcome{{Type: "LandingZoneReady", Status: resource.StatusTrue, Reason: "NamespaceReady", Message: "ok"}}}
	first := Compute(in).Conditions
	last := first[len(first)-1]
	if last.Type != "LandingZoneReady" || last.Status != resource.StatusTrue || last.Reason != "NamespaceReady" || last.ObservedGeneration != 3 || !last.LastTransitionTime.Equal(t0) {
		t.Fatalf("rule condition %+v", last)
	}
	in.Previous, in.Now = first, t0.Add(time.Minute)
	again := Compute(in).Conditions
	if c := again[len(again)-1]; !c.LastTransitionTime.Equal(t0) || !c.CreatedTime.Equal(t0) {
		t.Fatalf("unchanged rule moved its times: %+v", c)
	}
	in.Rules[0].Status = resource.StatusFalse
	flipped := Compute(in).Conditions
	if c := flipped[len(flipped)-1]; c.Status != resource.StatusFalse || !c.LastTransitionTime.Equal(in.Now) {
		t.Fatalf("flipped rule %+v", c)
	}
}

// Contract: a parent's children are told when it becomes Reconciled (first
// time, again after it was not, or at a newer generation), not each time
// a report re-reads the same Reconciled generation.
func TestBecameReconciled(t *testing.T) {
	rec := func(status resource.ConditionStatus, gen int64) []resource.Condition {
		return []resource.Condition{{Type: resource.ConditionReady, Status: status, ObservedGeneration: gen},
			{Type: resource.ConditionReconciled, Status: status, ObservedGeneration: gen}}
	}
	tests := []struct {
		name           string
		previous, next []resource.Condition
		want           bool
	}{
		{"first aggregation, Reconciled", nil, rec("True", 1), true},
		{"first aggregation, not Reconciled", nil, rec("False", 1), false},
		{"turns True", rec("False", 1), rec("True", 1), true},
		{"recovers from Unknown", rec("Unknown", 2), rec("True", 2), true},
		{"a newer generation takes effect", rec("True", 1), rec("True", 2), true},
		{"the same generation again", rec("True", 2), rec("True", 2), false},
		{"turns False", rec("True", 2), rec("False", 3), false},
		{"no Reconciled condition", rec("True", 1), prevAvailable("True", 2, "R"), false},
	}
	for _, tc := range tests {
		if got := BecameReconciled(tc.previous, tc.next); got != tc.want {
			t.Errorf("%s: BecameReconciled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
