package statusreport

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func valid() resource.StatusReport {
	return resource.StatusReport{
		Adapter: "validation", ObservedGeneration: 1, ObservedTime: now,
		Conditions: []resource.ReportCondition{
			{Type: "Available", Status: "True"}, {Type: "Applied", Status: "True"}, {Type: "Health", Status: "True"},
		},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *resource.StatusReport)
		fields []string // fields named by the errors, in order; empty = valid
	}{
		{"valid", func(r *resource.StatusReport) {}, nil},
		{"extra conditions are fine", func(r *resource.StatusReport) {
			r.Conditions = append(r.Conditions, resource.ReportCondition{Type: "Finalized", Status: "False"})
		}, nil},
		{"missing adapter", func(r *resource.StatusReport) { r.Adapter = "" }, []string{"adapter"}},
		{"generation 0", func(r *resource.StatusReport) { r.ObservedGeneration = 0 }, []string{"observed_generation"}},
		{"negative generation", func(r *resource.StatusReport) { r.ObservedGeneration = -3 }, []string{"observed_generation"}},
		{"missing observed_time", func(r *resource.StatusReport) { r.ObservedTime = time.Time{} }, []string{"observed_time"}},
		{"observed_time 6 minutes ahead", func(r *resource.StatusReport) { r.ObservedTime = now.Add(6 * time.Minute) }, []string{"observed_time"}},
		{"observed_time 4 minutes ahead is tolerated", func(r *resource.StatusReport) { r.ObservedTime = now.Add(4 * time.Minute) }, nil},
		{"observed_time 31 minutes old", func(r *resource.StatusReport) { r.ObservedTime = now.Add(-31 * time.Minute) }, []string{"observed_time"}},
		{"observed_time 29 minutes old is tolerated", func(r *resource.StatusReport) { r.ObservedTime = now.Add(-29 * time.Minute) }, nil},
		{"conditions missing", func(r *resource.StatusReport) { r.Conditions = nil }, []string{"conditions"}},
		{"conditions empty", func(r *resource.StatusReport) { r.Conditions = []resource.ReportCondition{} },
			[]string{"conditions", "conditions", "conditions"}},
		{"Health missing", func(r *resource.StatusReport) { r.Conditions = r.Conditions[:2] }, []string{"conditions"}},
		{"empty type", func(r *resource.StatusReport) { r.Conditions[0].Type = "" }, []string{"conditions[0].type", "conditions"}},
		{"duplicate type", func(r *resource.StatusReport) {
			r.Conditions = append(r.Conditions, resource.ReportCondition{Type: "Health", Status: "False"})
		}, []string{"conditions[3].type"}},
		{"bad status", func(r *resource.StatusReport) { r.Conditions[1].Status = "true" }, []string{"conditions[1].status"}},
		{"data must be an object", func(r *resource.StatusReport) { r.Data = json.RawMessage(`[1]`) }, []string{"data"}},
		{"metadata must be an object", func(r *resource.StatusReport) { r.Metadata = json.RawMessage(`"x"`) }, []string{"metadata"}},
		{"data object ok", func(r *resource.StatusReport) { r.Data = json.RawMessage(` {"a":1}`) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.mutate(&r)
			errs := Validate(&r, now)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				if e.Message == "" {
					t.Errorf("error for %s has no message", e.Field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("fields = %v, want %v (%+v)", got, tc.fields, errs)
			}
		})
	}
}

func withAvailable(status resource.ConditionStatus, gen int64) *resource.StatusReport {
	r := valid()
	r.ObservedGeneration = gen
	r.Conditions[0].Status = status
	return &r
}

func TestDecide(t *testing.T) {
	stored := &resource.AdapterStatus{Adapter: "validation", ObservedGeneration: 2}
	tests := []struct {
		name     string
		report   *resource.StatusReport
		resGen   int64
		existing *resource.AdapterStatus
		want     Outcome
	}{
		{"first report True", withAvailable("True", 1), 1, nil, Upsert},
		{"first report False", withAvailable("False", 1), 1, nil, Upsert},
		{"ahead of the resource", withAvailable("True", 3), 2, nil, Discard},
		{"older than stored", withAvailable("True", 1), 3, stored, Discard},
		{"same generation as stored", withAvailable("False", 2), 3, stored, Upsert},
		{"newer than stored", withAvailable("True", 3), 3, stored, Upsert},
		{"first Unknown stored, not aggregated", withAvailable("Unknown", 1), 1, nil, StoreOnly},
		{"Unknown after a report is ignored", withAvailable("Unknown", 3), 3, stored, Discard},
		{"Unknown ahead of the resource is discarded", withAvailable("Unknown", 5), 1, nil, Discard},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Decide(tc.report, tc.resGen, tc.existing)
			if got != tc.want {
				t.Errorf("Decide = %v (%s), want %v", got, why, tc.want)
			}
			if got == Discard && why == "" {
				t.Error("a discard must say why")
			}
		})
	}
}

func TestMerge(t *testing.T) {
	first := Merge(withAvailable("False", 1), nil, now)
	if !first.CreatedTime.Equal(now) || !first.LastReportTime.Equal(now) {
		t.Fatalf("first report times = %v/%v", first.CreatedTime, first.LastReportTime)
	}
	for _, c := range first.Conditions {
		if !c.LastTransitionTime.Equal(now) {
			t.Errorf("%s transition = %v, want %v", c.Type, c.LastTransitionTime, now)
		}
	}
	later := now.Add(time.Minute)
	second := Merge(withAvailable("True", 2), &first, later)
	if !second.CreatedTime.Equal(now) || !second.LastReportTime.Equal(later) {
		t.Errorf("second report created/last = %v/%v, want %v/%v", second.CreatedTime, second.LastReportTime, now, later)
	}
	for _, c := range second.Conditions {
		wantT := now // Applied and Health unchanged
		if c.Type == "Available" {
			wantT = later // False -> True
		}
		if !c.LastTransitionTime.Equal(wantT) {
			t.Errorf("%s transition = %v, want %v", c.Type, c.LastTransitionTime, wantT)
		}
	}
}
