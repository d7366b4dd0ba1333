package api

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation"
	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation/guard"
)

// fakeEngine stands in for Temporal: it counts its reads and fails those
// of the ids in failing.
type fakeEngine struct {
	reads   atomic.Int32
	failing map[string]bool
}

func (f *fakeEngine) Read(_ context.Context, kind, id string) (reconciliation.Workflow, error) {
	f.reads.Add(1)
	if f.failing[id] {
		return reconciliation.Workflow{}, fmt.Errorf("%w: describe: deadline exceeded", reconciliation.ErrUnavailable)
	}
	return reconciliation.Workflow{ID: kind + "-" + id}, nil
}

// Contract: callers of one resource share a read of the workflow engine;
// a read beyond the replica's budget is a 503 HYPERFLEET-SVC-005 with a
// Retry-After of as many seconds as the replica refuses reads a second
// for each it allows (1 to 30), and the engine is not read; the engine
// not answering
// stays a 503 HYPERFLEET-SVC-004 with Retry-After: 5.
func TestReconciliationReadsAreSharedAndBudgeted(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		a, b, c := e.createCluster("recon-a"), e.createCluster("recon-b"), e.createCluster("recon-c")
		engine := &fakeEngine{failing: map[string]bool{c.ID: true}}
		// One read at once and no second one for a long while; results
		// kept past the test, so its pace does not matter.
		shared, err := reconciliation.NewSharedReader(engine, guard.Config{PerSecond: 0.001, Reuse: time.Hour, MaxWait: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		e.app.Server.SetReconciliationSource(&apiserver.ReconciliationSource{Reader: shared})

		for range 3 {
			e.do("GET", a.Href+"/reconciliation", nil).expect(200)
		}
		if n := engine.reads.Load(); n != 1 {
			t.Errorf("3 callers of one cluster made %d reads of the engine, want 1 shared", n)
		}
		r := e.do("GET", b.Href+"/reconciliation", nil)
		r.problem(503, "HYPERFLEET-SVC-005")
		// One refusal in 10 s against a read in 1000 s: far more than the
		// budget allows, so the longest wait.
		if got := r.header.Get("Retry-After"); got != "30" {
			t.Errorf("Retry-After of a budget refusal = %q, want 30", got)
		}
		if n := engine.reads.Load(); n != 1 {
			t.Errorf("a refused read reached the engine: %d reads, want 1", n)
		}
		// Other routes are not budgeted.
		e.getCluster(b.ID)

		roomy, err := reconciliation.NewSharedReader(engine, guard.Config{})
		if err != nil {
			t.Fatal(err)
		}
		e.app.Server.SetReconciliationSource(&apiserver.ReconciliationSource{Reader: roomy})
		for i := range 2 {
			r := e.do("GET", c.Href+"/reconciliation", nil)
			r.problem(503, "HYPERFLEET-SVC-004")
			if got := r.header.Get("Retry-After"); got != "5" {
				t.Errorf("Retry-After of the engine not answering = %q, want 5", got)
			}
			// A failed read is not handed out again: each caller reads.
			if n := engine.reads.Load(); n != int32(2+i) {
				t.Errorf("after %d failed reads the engine was read %d times, want %d", i+1, n, 2+i)
			}
		}
		e.do("GET", b.Href+"/reconciliation", nil).expect(200)
	})
}
