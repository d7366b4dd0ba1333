package wake

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

type recorder struct {
	mu   sync.Mutex
	sent []reconcile.Signal
	ids  []string
}

func (r *recorder) SignalWorkflow(_ context.Context, id, _, _ string, arg any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	r.sent = append(r.sent, arg.(reconcile.Signal))
	return nil
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
