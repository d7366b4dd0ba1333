package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Contract: a required adapter hosted beside the reconciler runs as a
// local activity of the workflow (no task queue, no dispatch through
// Temporal's matching service); one the reconciler's worker does not host
// runs on its own task queue; optional adapters always run on theirs.

// localRuns lists, per adapter run, whether it was a local activity.
func (h *harness) localRuns() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := ""
	for _, c := range h.calls {
		where := "queue"
		if c.local {
			where = "local"
		}
		out += fmt.Sprintf("%s@%d:%s ", c.adapter, c.generation, where)
	}
	return out
}

func TestHostedAdaptersRunAsLocalActivities(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.removedAt(time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters, LocalRuns: true})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	if got := h.rounds(3); got[0] != "landing-zone@1,validation-job@1,validation@1" {
		t.Errorf("round = %q", got)
	}
	for _, c := range h.calls {
		if !c.local {
			t.Errorf("runs %s: want every hosted adapter run as a local activity", h.localRuns())
			break
		}
	}
}

func TestAdapterNotHostedBesideTheReconcilerRunsOnItsQueue(t *testing.T) {
	h := newHarness(t)
	h.notHosted = map[string]bool{"landing-zone": true}
	h.states = []ResourceState{reconciledAt(1), reconciledAt(2), gone}
	h.signalAt(time.Minute, Signal{Generation: 2})
	h.removedAt(2 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"landing-zone", "validation"}, LocalRuns: true})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	h.rounds(2, 2)
	want := map[string]bool{"landing-zone@1:queue": true, "validation@1:local": true, "landing-zone@2:queue": true, "validation@2:local": true}
	got := h.localRuns()
	for w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("runs %s: want %s", got, w)
		}
	}
	// The answer is remembered for the run: the second round sends
	// landing-zone to its queue without asking again.
	if fmt.Sprint(h.refused) != "[landing-zone]" {
		t.Errorf("local runs refused as not hosted: %v, want landing-zone once", h.refused)
	}
}

func TestOptionalAdaptersRunOnTheirQueuesWithLocalRuns(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.removedAt(10 * time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Optional: []string{"informer"}, LocalRuns: true})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	got := h.localRuns()
	if !strings.Contains(got, "validation@1:local") || !strings.Contains(got, "informer@1:queue") {
		t.Errorf("runs %s: want validation local and the optional informer on its queue", got)
	}
}

// Without LocalRuns (a run the previous release started) every adapter
// runs on its queue, as that release's histories record.
func TestRunsWithoutLocalRunsUseTheQueues(t *testing.T) {
	h := newHarness(t)
	h.states = []ResourceState{reconciledAt(1), gone}
	h.removedAt(time.Minute)
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	for _, c := range h.calls {
		if c.local {
			t.Errorf("runs %s: want none local", h.localRuns())
			break
		}
	}
}
