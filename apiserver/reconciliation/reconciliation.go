// Package reconciliation answers "why is my resource not Ready?" through
// the API: GET <resource>/reconciliation composes what the resource's
// reconcile workflow says of itself (its state query, and Temporal's
// record of adapter runs still being retried) with where its change stands
// in the outbox. Tenants never need Temporal access for it.
package reconciliation

import (
	"sort"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Workflow is what Temporal says of a resource's reconcile workflow.
type Workflow struct {
	// Found is false when the resource has no workflow (yet, or any
	// more).
	Found bool
	ID    string
	View  reconcile.View
	// Pending are the adapter runs Temporal is dispatching or retrying
	// on their task queues (not local runs), by adapter.
	Pending map[string]PendingRun
}

// PendingRun is an adapter run on its task queue that has not ended.
type PendingRun struct {
	Attempt     int32
	LastFailure string
	Scheduled   bool // waiting for a worker to take it
}

// Queue is where a resource's change stands in the outbox.
type Queue struct {
	// Waiting says a change of the resource waits for admission; Ahead
	// counts the changes handed over before it, and StartIn estimates
	// when it will be, at the recent rate.
	Waiting bool
	Ahead   int
	StartIn time.Duration
}

// States of a reconciliation.
const (
	StateAwaitingAdmission = "awaiting-admission"
	StateNotStarted        = "not-started"
	StateRunning           = "running"
	StateWaiting           = "waiting"
	StateReconciled        = "reconciled"
	StateFinished          = "finished"
)

// Report is the body of GET <resource>/reconciliation.
type Report struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Generation is the resource's; ReconcilingGeneration the one the
	// workflow's current (or last) round acts on.
	Generation            int64  `json:"generation"`
	ReconcilingGeneration int64  `json:"reconciling_generation,omitempty"`
	State                 string `json:"state"`
	// Admission is set while the resource's change waits in the outbox.
	Admission *Admission `json:"admission,omitempty"`
	Round     *Round     `json:"round,omitempty"`
	NextRound *NextRound `json:"next_round,omitempty"`
	Adapters  []Adapter  `json:"adapters"`
	// Workflow names the Temporal workflow: for system callers only.
	Workflow *WorkflowRef `json:"workflow,omitempty"`
}

// Admission is where a waiting change stands.
type Admission struct {
	ChangesAhead         int     `json:"changes_ahead"`
	ExpectedStartSeconds float64 `json:"expected_start_seconds"`
}

// Round is the workflow's current or last round.
type Round struct {
	Number int64  `json:"number"`
	Cause  string `json:"cause,omitempty"`
}

// NextRound is when the next round is due, and why.
type NextRound struct {
	At    time.Time `json:"at"`
	Cause string    `json:"cause"`
}

// Adapter is one adapter of the resource's kind.
type Adapter struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
	// Running says a run is under way, since RunningSince.
	Running      bool       `json:"running"`
	RunningSince *time.Time `json:"running_since,omitempty"`
	// Attempts and LastFailure are those of a run on the adapter's task
	// queue that Temporal is still retrying; WaitingForWorker says no
	// worker has taken it yet.
	Attempts         int32    `json:"attempts,omitempty"`
	LastFailure      string   `json:"last_failure,omitempty"`
	WaitingForWorker bool     `json:"waiting_for_worker,omitempty"`
	LastRun          *LastRun `json:"last_run,omitempty"`
}

// LastRun is how an adapter's last run ended.
type LastRun struct {
	Generation int64      `json:"generation"`
	Outcome    string     `json:"outcome"`
	Error      string     `json:"error,omitempty"`
	Detail     string     `json:"detail,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt time.Time  `json:"finished_at"`
	DurationMS *int64     `json:"duration_ms,omitempty"`
}

// WorkflowRef names the workflow, with its page in Temporal's UI.
type WorkflowRef struct {
	ID    string `json:"id"`
	UIURL string `json:"ui_url,omitempty"`
}

// Build composes the report of res (as the caller may read it) from its
// workflow and its place in the outbox. registered and optional are the
// kind's adapters, so an adapter that never ran is listed too.
func Build(res *resource.Resource, wf Workflow, q Queue, registered, optional []string) Report {
	r := Report{Kind: res.Kind, ID: res.ID, Generation: res.Generation, Adapters: []Adapter{}}
	if q.Waiting {
		r.Admission = &Admission{ChangesAhead: q.Ahead, ExpectedStartSeconds: q.StartIn.Seconds()}
	}
	v := wf.View
	required := registered
	if wf.Found && len(v.Required) > 0 {
		required = v.Required
	}
	if wf.Found {
		r.ReconcilingGeneration = v.Target
		if v.Round > 0 {
			r.Round = &Round{Number: v.Round, Cause: string(v.RoundCause)}
		}
		if !v.NextRound.IsZero() && v.Phase != reconcile.PhaseRunning && v.Phase != reconcile.PhaseFinished {
			r.NextRound = &NextRound{At: v.NextRound.UTC(), Cause: string(v.NextRoundCause)}
		}
	}
	r.State = state(wf, q, v)
	names := map[string]bool{}
	for _, n := range required {
		names[n] = true
	}
	for _, n := range optional {
		names[n] = true
	}
	for n := range v.Adapters {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		r.Adapters = append(r.Adapters, adapterOf(n, contains(required, n), v, wf.Pending[n]))
	}
	return r
}

func state(wf Workflow, q Queue, v reconcile.View) string {
	switch {
	case q.Waiting:
		return StateAwaitingAdmission
	case !wf.Found:
		return StateNotStarted
	case v.Phase == reconcile.PhaseFinished:
		return StateFinished
	case v.Phase == reconcile.PhaseRunning:
		return StateRunning
	case v.Reconciled:
		return StateReconciled
	}
	return StateWaiting
}

func adapterOf(name string, required bool, v reconcile.View, p PendingRun) Adapter {
	a := Adapter{Name: name, Required: required, Attempts: p.Attempt, LastFailure: p.LastFailure, WaitingForWorker: p.Scheduled}
	if at, ok := v.RunningAt[name]; ok {
		at = at.UTC()
		a.Running, a.RunningSince = true, &at
	} else if contains(v.Running, name) {
		a.Running = true
	}
	if last, ok := v.Adapters[name]; ok {
		lr := &LastRun{Generation: last.Generation, Outcome: string(last.Outcome), FinishedAt: last.FinishedAt.UTC()}
		if last.Outcome == reconcile.OutcomeError || last.Outcome == reconcile.OutcomeFailed {
			lr.Error = last.Detail
		} else {
			lr.Detail = last.Detail
		}
		if !last.StartedAt.IsZero() {
			started := last.StartedAt.UTC()
			ms := last.FinishedAt.Sub(last.StartedAt).Milliseconds()
			lr.StartedAt, lr.DurationMS = &started, &ms
		}
		a.LastRun = lr
	}
	return a
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
