package reconciliation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

func TestBuild(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	res := &resource.Resource{Kind: resource.KindCluster, ID: "c1", Generation: 2}
	registered, optional := []string{"landing-zone", "validation"}, []string{"informer"}
	running := reconcile.View{Phase: reconcile.PhaseRunning, Target: 2, Round: 3, RoundCause: reconcile.CauseProgress,
		Required: registered, Optional: optional, Running: []string{"landing-zone"}, RunningAt: map[string]time.Time{"landing-zone": t0},
		Adapters: map[string]reconcile.AdapterView{
			"validation":   {Generation: 2, Outcome: reconcile.OutcomeSuccess, StartedAt: t0.Add(-time.Second), FinishedAt: t0},
			"landing-zone": {Generation: 1, Outcome: reconcile.OutcomeError, Detail: "run: timeout (is a worker hosting this adapter running?)", FinishedAt: t0.Add(-time.Minute)},
		}}
	cases := []struct {
		name  string
		wf    Workflow
		q     Queue
		check func(t *testing.T, r Report)
	}{
		{"waiting for admission", Workflow{}, Queue{Waiting: true, Ahead: 120, StartIn: 8 * time.Second}, func(t *testing.T, r Report) {
			if r.State != StateAwaitingAdmission || r.Admission == nil || r.Admission.ChangesAhead != 120 || r.Admission.ExpectedStartSeconds != 8 {
				t.Errorf("report %+v admission %+v", r, r.Admission)
			}
			if len(r.Adapters) != 3 || r.Adapters[0].Name != "informer" || r.Adapters[0].Required || !r.Adapters[1].Required {
				t.Errorf("adapters %+v: want every adapter of the kind, required or not, although none ran", r.Adapters)
			}
		}},
		{"no workflow yet", Workflow{}, Queue{}, func(t *testing.T, r Report) {
			if r.State != StateNotStarted || r.Round != nil || r.Admission != nil {
				t.Errorf("report %+v", r)
			}
		}},
		{"a round under way", Workflow{Found: true, View: running, Pending: map[string]PendingRun{"landing-zone": {Attempt: 3, LastFailure: "boom"}}}, Queue{}, func(t *testing.T, r Report) {
			if r.State != StateRunning || r.Round == nil || r.Round.Number != 3 || r.Round.Cause != "progress" || r.ReconcilingGeneration != 2 || r.NextRound != nil {
				t.Errorf("report %+v round %+v", r, r.Round)
			}
			lz := r.Adapters[1]
			if lz.Name != "landing-zone" || !lz.Running || lz.RunningSince == nil || !lz.RunningSince.Equal(t0) || lz.Attempts != 3 || lz.LastFailure != "boom" {
				t.Errorf("landing-zone %+v", lz)
			}
			if lz.LastRun == nil || lz.LastRun.Error == "" || lz.LastRun.DurationMS != nil {
				t.Errorf("landing-zone's last run %+v: want its error, and no duration (no start time known)", lz.LastRun)
			}
			v := r.Adapters[2]
			if v.Running || v.LastRun == nil || v.LastRun.Outcome != "success" || v.LastRun.DurationMS == nil || *v.LastRun.DurationMS != 1000 || v.LastRun.Error != "" {
				t.Errorf("validation %+v, last run %+v", v, v.LastRun)
			}
		}},
		{"waiting between rounds", Workflow{Found: true, View: reconcile.View{Phase: reconcile.PhaseBackoff, NextRound: t0, NextRoundCause: reconcile.WaitBackoff, Round: 4}}, Queue{}, func(t *testing.T, r Report) {
			if r.State != StateWaiting || r.NextRound == nil || r.NextRound.Cause != "backoff" || !r.NextRound.At.Equal(t0) {
				t.Errorf("report %+v next %+v", r, r.NextRound)
			}
		}},
		{"reconciled", Workflow{Found: true, View: reconcile.View{Phase: reconcile.PhaseStable, Reconciled: true, NextRound: t0, NextRoundCause: reconcile.WaitSafetyNet}}, Queue{}, func(t *testing.T, r Report) {
			if r.State != StateReconciled || r.NextRound == nil || r.NextRound.Cause != "safety-net" {
				t.Errorf("report %+v", r)
			}
		}},
		{"a new change waits while a round of the last one runs", Workflow{Found: true, View: running}, Queue{Waiting: true}, func(t *testing.T, r Report) {
			if r.State != StateAwaitingAdmission || r.Round == nil {
				t.Errorf("report %+v: the waiting change comes first, the round under way is still shown", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Build(res, c.wf, c.q, registered, optional)
			if r.Kind != "Cluster" || r.ID != "c1" || r.Generation != 2 || r.Workflow != nil {
				t.Errorf("report %+v: the resource's identity, and no workflow link (the handler adds it for system callers)", r)
			}
			c.check(t, r)
			if _, err := json.Marshal(r); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadBudget(t *testing.T) {
	for _, c := range []struct {
		base    float64
		waiting int
		want    float64
	}{
		{10, 0, 10},
		{10, 1, 1},
		{100, 5000, 10},
		{5, 3, 1}, // never below one a second
		{0.5, 0, 0.5},
		{0.5, 2, 0.5}, // nor above base
	} {
		if got := ReadBudget(c.base, c.waiting); got != c.want {
			t.Errorf("ReadBudget(%g, %d) = %g, want %g", c.base, c.waiting, got, c.want)
		}
	}
}
