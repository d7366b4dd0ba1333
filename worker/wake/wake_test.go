package wake

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

type recorder struct {
	mu       sync.Mutex
	sent     []reconcile.Signal
	ids      []string
	requests []string // each signal's request id, "" for the SDK's random one
}

func (r *recorder) SignalWorkflow(ctx context.Context, id, _, _ string, arg any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	r.sent = append(r.sent, arg.(reconcile.Signal))
	r.requests = append(r.requests, temporalclient.SignalRequestID(ctx))
	return nil
}

func (r *recorder) requestIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

func (r *recorder) signals() []reconcile.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reconcile.Signal(nil), r.sent...)
}

// Reports a few milliseconds apart (a ManifestWork applied, then its
// feedback) fold into the first signal: one round, not two. The test runs
// in a synctest bubble, so the waker's timers run on a fake clock: the
// sleeps below take no real time and land exactly where they say.
func TestChangesInQuickSuccessionFoldIntoTheFirstSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		w := New(time.Second, nil, zerolog.Nop())
		w.Attach(rec)
		work := transport.Ref{Kind: "ManifestWork", Namespace: "cluster1", Name: "w"}
		for _, d := range []string{"applied", "feedback"} {
			w.Notify(transport.Change{Adapter: "cl-maestro", OwnerKind: "Cluster", OwnerID: "c1", Object: work, What: transport.ChangeStatus, Digest: d})
			time.Sleep(5 * time.Millisecond)
		}
		// The second report restarted the wait for quiet: nothing is sent
		// until the settle time has passed since it.
		time.Sleep(DefaultSettle - 5*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if got := rec.signals(); len(got) != 0 {
			t.Fatalf("signalled %+v before the reports had settled", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := rec.signals(); len(got) != 1 {
			t.Fatalf("signals once settled = %+v, want 1", got)
		}
		time.Sleep(1200 * time.Millisecond) // past the interval: nothing more may follow
		synctest.Wait()
		got := rec.signals()
		if len(got) != 1 || len(got[0].Objects) != 1 || got[0].Objects[0].Digest != "feedback" {
			t.Fatalf("signals = %+v; want one carrying the latest state (digest feedback)", got)
		}
	})
}

// The first change is signalled once quiet; the rest of a burst fold into one
// signal at the end of the interval carrying each object's latest state.
func TestBurstFoldsIntoOneSignalWithTheLatestState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 200 * time.Millisecond
		rec := &recorder{}
		w := New(interval, nil, zerolog.Nop())
		w.Attach(rec)
		job := transport.Ref{Kind: "Job", Namespace: "c1", Name: "j"}
		change := func(digest string, what transport.ChangeKind) transport.Change {
			return transport.Change{Adapter: "cl-job", OwnerKind: "Cluster", OwnerID: "c1", Object: job, What: what, Digest: digest}
		}
		w.Notify(change("d1", transport.ChangeStatus))
		time.Sleep(DefaultSettle)
		synctest.Wait()
		if got := rec.signals(); len(got) != 1 {
			t.Fatalf("signals once the first change settled = %+v, want 1", got)
		}
		w.Notify(change("d2", transport.ChangeStatus))
		w.Notify(change("d3", transport.ChangeStatus))
		w.Notify(transport.Change{Adapter: "cl-deployment", OwnerKind: "Cluster", OwnerID: "c1", Object: transport.Ref{Kind: "Deployment", Namespace: "c1", Name: "d"}, What: transport.ChangeDeleted})
		// The burst waits out the interval since the first signal.
		time.Sleep(interval - time.Nanosecond)
		synctest.Wait()
		if got := rec.signals(); len(got) != 1 {
			t.Fatalf("signals within the interval = %+v, want only the first", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		time.Sleep(300 * time.Millisecond) // nothing more may follow
		synctest.Wait()
		got := rec.signals()
		if len(got) != 2 {
			t.Fatalf("signals = %+v, want 2", got)
		}
		first, second := got[0], got[1]
		if first.Reason != reconcile.ReasonObjectChanged || len(first.Objects) != 1 || first.Objects[0].Digest != "d1" {
			t.Errorf("first signal = %+v", first)
		}
		want := []reconcile.ObjectChange{
			{Adapter: "cl-deployment", Object: "Deployment c1/d"},
			{Adapter: "cl-job", Object: "Job c1/j", Digest: "d3"},
		}
		if len(second.Objects) != 2 || second.Objects[0] != want[0] || second.Objects[1] != want[1] {
			t.Errorf("folded signal objects = %+v, want %+v", second.Objects, want)
		}
		if len(second.Changed) != 2 || second.Changed[0] != "cl-deployment" || second.Changed[1] != "cl-job" {
			t.Errorf("folded signal adapters = %v", second.Changed)
		}
		if rec.ids[0] != reconcile.WorkflowID("Cluster", "c1") {
			t.Errorf("signalled %s", rec.ids[0])
		}
	})
}

// Every worker watches the objects and signals what it saw. Workers that
// saw the same changes name their signals alike, so Temporal records one;
// a later change gets a new name even when the object is back to an
// earlier state, and a change without a version keeps a random one.
func TestWorkersSeeingTheSameChangeNameTheSignalAlike(t *testing.T) {
	job := transport.Ref{Kind: "Job", Namespace: "c1", Name: "j"}
	cm := transport.Ref{Kind: "ConfigMap", Namespace: "c1", Name: "m"}
	change := func(obj transport.Ref, digest, version string) transport.Change {
		return transport.Change{Adapter: "cl-job", OwnerKind: "Cluster", OwnerID: "c1", Object: obj, What: transport.ChangeStatus, Digest: digest, Version: version}
	}
	// requestID is the request id of the one signal a fresh waker sends for
	// changes, reported in that order.
	requestID := func(t *testing.T, changes ...transport.Change) string {
		t.Helper()
		var id string
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			w := New(time.Second, nil, zerolog.Nop())
			w.Attach(rec)
			for _, c := range changes {
				w.Notify(c)
			}
			time.Sleep(DefaultSettle)
			synctest.Wait()
			got := rec.requestIDs()
			if len(got) != 1 {
				t.Fatalf("signals = %d, want 1", len(got))
			}
			id = got[0]
		})
		return id
	}
	first := requestID(t, change(job, "running", "10"), change(cm, "ready", "11"))
	if first == "" {
		t.Fatal("a signal of versioned changes got no request id of its own")
	}
	cases := []struct {
		name    string
		changes []transport.Change
		same    bool
	}{
		{"another worker, the same changes in another order", []transport.Change{change(cm, "ready", "11"), change(job, "running", "10")}, true},
		{"a later change to the same state", []transport.Change{change(job, "running", "12"), change(cm, "ready", "11")}, false},
		{"another state", []transport.Change{change(job, "complete", "10"), change(cm, "ready", "11")}, false},
		{"one object fewer", []transport.Change{change(job, "running", "10")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := requestID(t, c.changes...); (got == first) != c.same {
				t.Fatalf("request id %q against %q: same = %v, want %v", got, first, got == first, c.same)
			}
		})
	}
	if got := requestID(t, change(job, "running", "10"), change(cm, "", "")); got != "" {
		t.Fatalf("a change without a version got request id %q; want the SDK's random one", got)
	}
	otherJob, otherCM := change(job, "running", "10"), change(cm, "ready", "11")
	otherJob.OwnerID, otherCM.OwnerID = "c2", "c2"
	if got := requestID(t, otherJob, otherCM); got == first {
		t.Fatal("two workflows' signals share a request id")
	}
}
