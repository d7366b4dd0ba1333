//go:build integration

package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/relay"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// world is a store, the lifecycle service writing to it, and a real
// Temporal server with no worker: workflows started here just wait, which
// is all the relay is responsible for.
type world struct {
	t     *testing.T
	store store.Store
	svc   *lifecycle.Service
	tc    client.Client
	relay *relay.Relay
}

var registered = map[string][]string{resource.KindCluster: {"validation", "landing-zone"}, resource.KindNodePool: {"nodepool-config"}}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hf.db"), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := embeddedtemporal.Start(embeddedtemporal.Config{SearchAttributes: reconcile.SearchAttributes()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	tc, err := srv.Dial(client.Options{Logger: silent{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	w := &world{t: t, store: st, tc: tc,
		svc: lifecycle.New(lifecycle.Config{Store: st, Registered: registered, Logger: zerolog.Nop()})}
	w.relay = relay.New(relay.Config{Store: st, Temporal: tc, Registered: registered, Sweep: -1,
		Options: reconcile.Options{StabilityWindow: time.Hour}, Logger: zerolog.Nop()})
	return w
}

func (w *world) createCluster(name string) *resource.Resource {
	w.t.Helper()
	r, err := w.svc.Create(context.Background(), resource.KindCluster, "", &lifecycle.CreateRequest{Kind: resource.KindCluster, Name: name, Spec: json.RawMessage(`{}`)}, "test")
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) pending() int {
	w.t.Helper()
	rows, err := w.store.PendingOutbox(context.Background(), 1000)
	if err != nil {
		w.t.Fatal(err)
	}
	return len(rows)
}

// started returns the input a workflow was started with and the signals it
// received.
func (w *world) started(kind, id string) (reconcile.Input, []reconcile.Signal) {
	w.t.Helper()
	it := w.tc.GetWorkflowHistory(context.Background(), reconcile.WorkflowID(kind, id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var in reconcile.Input
	var sigs []reconcile.Signal
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			w.t.Fatalf("history of %s %s: %v", kind, id, err)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			if err := json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in); err != nil {
				w.t.Fatal(err)
			}
			if a.GetTaskQueue().GetName() != reconcile.TaskQueue {
				w.t.Errorf("started on task queue %s", a.GetTaskQueue().GetName())
			}
		}
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			var s reconcile.Signal
			if err := json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &s); err != nil {
				w.t.Fatal(err)
			}
			sigs = append(sigs, s)
		}
	}
	return in, sigs
}

func (w *world) workflowExists(kind, id string) bool {
	w.t.Helper()
	_, err := w.tc.DescribeWorkflowExecution(context.Background(), reconcile.WorkflowID(kind, id), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return true
}

func TestDrainStartsOneWorkflowPerResourceAtItsNewestGeneration(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := w.createCluster("relay-1")
	for _, spec := range []string{`{"a":1}`, `{"a":2}`} {
		if _, err := w.svc.Patch(ctx, lifecycle.Ref{Kind: resource.KindCluster, ID: c.ID}, &lifecycle.PatchRequest{Spec: json.RawMessage(spec)}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	np, err := w.svc.Create(ctx, resource.KindNodePool, c.ID, &lifecycle.CreateRequest{Kind: resource.KindNodePool, Name: "workers", Spec: json.RawMessage(`{}`)}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if w.pending() != 4 {
		t.Fatalf("outbox holds %d rows, want 4 (create, 2 patches, node pool)", w.pending())
	}

	n, err := w.relay.Drain(ctx)
	if err != nil || n != 4 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if w.pending() != 0 {
		t.Errorf("%d rows left after a successful drain", w.pending())
	}
	in, sigs := w.started(resource.KindCluster, c.ID)
	if in.Ref != (reconcile.Ref{Kind: resource.KindCluster, ID: c.ID}) || in.Generation != 3 ||
		fmt.Sprint(in.Adapters) != "[validation landing-zone]" || in.Options.StabilityWindow != time.Hour {
		t.Errorf("cluster workflow input = %+v", in)
	}
	if len(sigs) != 1 || sigs[0].Generation != 3 || sigs[0].Reason != "updated" || sigs[0].Options == nil {
		t.Errorf("signals = %+v, want one at generation 3", sigs)
	}
	npIn, _ := w.started(resource.KindNodePool, np.ID)
	if npIn.Ref.ParentID != c.ID || fmt.Sprint(npIn.Adapters) != "[nodepool-config]" {
		t.Errorf("node pool workflow input = %+v", npIn)
	}

	// Delivering the same generation again (a second replica, a crash
	// before the ack) only adds a signal to the same workflow.
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	_, sigs = w.started(resource.KindCluster, c.ID)
	if len(sigs) != 2 || sigs[1].Reason != reconcile.ReasonResync || sigs[1].Generation != 3 {
		t.Errorf("after resync, signals = %+v", sigs)
	}
}

func TestRemovedResourceGetsNoNewWorkflow(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := w.createCluster("relay-removed")
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	// A node pool created and removed before the relay ran: its rows fold
	// into "removed", which must not start a workflow.
	removeNodePool := func(id string) {
		t.Helper()
		err := w.store.InTx(ctx, func(tx store.Tx) error {
			for _, e := range []store.OutboxEntry{
				{Kind: resource.KindNodePool, ResourceID: id, ParentID: c.ID, Generation: 1, Reason: store.OutboxCreated, CreatedTime: time.Now()},
				{Kind: resource.KindNodePool, ResourceID: id, ParentID: c.ID, Generation: 2, Reason: store.OutboxRemoved, CreatedTime: time.Now()},
			} {
				if err := tx.AppendOutbox(ctx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.relay.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if w.workflowExists(resource.KindNodePool, id) {
			t.Errorf("removed node pool %s got a workflow", id)
		}
		if w.pending() != 0 {
			t.Error("rows of a removed resource stay pending")
		}
	}

	// The cluster is not deleting: a node pool's removal leaves it alone
	// (a round it did not need could drop it out of Reconciled).
	removeNodePool("np-gone")
	_, before := w.started(resource.KindCluster, c.ID)
	for _, s := range before {
		if s.Reason == reconcile.ReasonChildRemoved {
			t.Errorf("a cluster that is not deleting was told a node pool went: %+v", before)
		}
	}

	// A deleting cluster waits for its node pools: it is told.
	if _, err := w.svc.Delete(ctx, lifecycle.Ref{Kind: resource.KindCluster, ID: c.ID}, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	removeNodePool("np-gone-2")
	_, sigs := w.started(resource.KindCluster, c.ID)
	if last := sigs[len(sigs)-1]; last.Reason != reconcile.ReasonChildRemoved {
		t.Errorf("deleting cluster's last signal = %+v, want child-removed", last)
	}
}

func TestKindWithoutAdaptersIsAcknowledged(t *testing.T) {
	w := newWorld(t)
	w.relay = relay.New(relay.Config{Store: w.store, Temporal: w.tc, Registered: map[string][]string{resource.KindCluster: {}}, Logger: zerolog.Nop()})
	c := w.createCluster("relay-no-adapters")
	if _, err := w.relay.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.workflowExists(resource.KindCluster, c.ID) || w.pending() != 0 {
		t.Error("with no adapters registered, nothing is started and the row is done")
	}
}

func TestUnreachableTemporalKeepsRowsAndReportsUnready(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	// A reserved port nobody listens on (an ephemeral one, closed again,
	// could be bound by another process meanwhile).
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	down, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: silent{}})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	r := relay.New(relay.Config{Store: w.store, Temporal: down, Registered: registered, CallTimeout: 300 * time.Millisecond, Logger: zerolog.Nop()})
	c := w.createCluster("relay-down")

	if _, err := r.Drain(ctx); err == nil {
		t.Fatal("Drain succeeded with Temporal down")
	}
	if w.pending() != 1 {
		t.Errorf("the row must wait for Temporal, pending = %d", w.pending())
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := r.Check(cctx); err == nil {
		t.Error("Check = nil with Temporal down")
	}
	// The same row goes through once Temporal answers.
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.workflowExists(resource.KindCluster, c.ID) || w.pending() != 0 {
		t.Error("the waiting row was not delivered")
	}
	if err := w.relay.Check(ctx); err != nil {
		t.Errorf("Check = %v with Temporal up", err)
	}
}

func TestRunDeliversOnNudgeAndResyncsAtStart(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A resource whose hand-off was lost (its row acknowledged, no
	// workflow): the start-up pass covers it.
	lost := w.createCluster("relay-lost")
	rows, _ := w.store.PendingOutbox(ctx, 10)
	for _, r := range rows {
		_ = w.store.AckOutbox(ctx, r.ID)
	}
	w.svc.OnOutbox(w.relay.Nudge)
	done := make(chan error, 1)
	go func() { done <- w.relay.Run(ctx) }()

	await.True(t, 10*time.Second, "the start-up pass did not start the lost resource's workflow", func() bool { return w.workflowExists(resource.KindCluster, lost.ID) })
	// The sweep is off: only the nudge after commit can deliver this one.
	c := w.createCluster("relay-nudged")
	await.True(t, 10*time.Second, "a nudge did not deliver the new cluster", func() bool { return w.workflowExists(resource.KindCluster, c.ID) })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

type silent struct{}

func (silent) Debug(string, ...any) {}
func (silent) Info(string, ...any)  {}
func (silent) Warn(string, ...any)  {}
func (silent) Error(string, ...any) {}

// A restart with the same adapters and options signals no running
// workflow (a fleet of 100,000 would otherwise take a round trip each);
// it only starts the ones Temporal lost. A changed registration tells
// every workflow.
func TestResyncTouchesOnlyWhatChanged(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	kept := w.createCluster("relay-kept")
	lost := w.createCluster("relay-lost")
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.relay.Resync(ctx); err != nil { // first start: no fingerprint yet
		t.Fatal(err)
	}
	_, sigs := w.started(resource.KindCluster, kept.ID)
	if len(sigs) != 2 || sigs[1].Reason != reconcile.ReasonResync {
		t.Fatalf("first resync: signals = %+v, want the creation's and one resync", sigs)
	}

	if err := w.tc.TerminateWorkflow(ctx, reconcile.WorkflowID(resource.KindCluster, lost.ID), "", "test: Temporal lost it"); err != nil {
		t.Fatal(err)
	}
	// Visibility trails the termination: wait until the list shows it.
	await.True(t, 10*time.Second, "the terminated workflow is still listed as running", func() bool {
		resp, err := w.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = '%s' AND ExecutionStatus = 'Running'", reconcile.WorkflowID(resource.KindCluster, lost.ID))})
		return err == nil && len(resp.GetExecutions()) == 0
	})
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, sigs := w.started(resource.KindCluster, kept.ID); len(sigs) != 2 {
		t.Errorf("an unchanged restart signalled a running workflow: %+v", sigs)
	}
	desc, err := w.tc.DescribeWorkflowExecution(ctx, reconcile.WorkflowID(resource.KindCluster, lost.ID), "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("the lost workflow was not started again: %v %v", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}

	// Another adapter registered: every workflow must hear of it.
	changed := map[string][]string{resource.KindCluster: {"validation", "landing-zone", "dns"}, resource.KindNodePool: {"nodepool-config"}}
	w.relay = relay.New(relay.Config{Store: w.store, Temporal: w.tc, Registered: changed, Sweep: -1,
		Options: reconcile.Options{StabilityWindow: time.Hour}, Logger: zerolog.Nop()})
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	_, sigs = w.started(resource.KindCluster, kept.ID)
	if last := sigs[len(sigs)-1]; len(sigs) != 3 || fmt.Sprint(last.Adapters) != "[validation landing-zone dns]" {
		t.Errorf("after a registration change, signals = %+v", sigs)
	}
}

// Contract: with a hand-off rate, rows above it wait in the outbox for a
// later pass instead of all going to Temporal at once.
func TestHandoffRateKeepsTheRestInTheOutbox(t *testing.T) {
	w := newWorld(t)
	w.relay = relay.New(relay.Config{Store: w.store, Temporal: w.tc, Registered: registered, Sweep: -1,
		HandoffRate: 1, Logger: zerolog.Nop()})
	for i := 0; i < 5; i++ {
		w.createCluster(fmt.Sprintf("rate-%d", i))
	}
	// At one a second, 1.5 s let at most two through (the first at once,
	// the second after a second).
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, _ = w.relay.Drain(ctx)
	cancel()
	if left := w.pending(); left < 3 {
		t.Errorf("%d rows left after 1.5 s at one hand-off a second, want at least 3", left)
	}
	// The next passes deliver the rest.
	for w.pending() > 0 {
		if _, err := w.relay.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
