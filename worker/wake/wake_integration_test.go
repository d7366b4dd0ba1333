//go:build integration

package wake_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/worker/wake"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Two workers watch the same Job and both see it complete. On a real
// Temporal server their two signals become one history event: the second
// carries the first's request id. A later change of the Job is a new
// event, and changes without a version are signalled once by each worker,
// as every signal was before.
func TestTwoWorkersSignalAChangeOnce(t *testing.T) {
	srv, err := embeddedtemporal.Start(embeddedtemporal.Config{SearchAttributes: reconcile.SearchAttributes()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	var wakers []*wake.Waker
	var tc client.Client
	for range 2 {
		c, err := temporalclient.Dial(temporalclient.Config{Address: srv.HostPort(), Namespace: srv.Namespace()}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		w := wake.New(time.Millisecond, nil, zerolog.Nop())
		w.Attach(c)
		wakers, tc = append(wakers, w), c
	}
	// A running workflow: nothing polls its task queue, so its history
	// holds only what is sent to it.
	id := reconcile.WorkflowID("Cluster", "c1")
	if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "nobody-polls"}, "Idle"); err != nil {
		t.Fatal(err)
	}
	signals := func() int {
		n := 0
		it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
				n++
			}
		}
		return n
	}
	bothSee := func(c transport.Change) {
		for _, w := range wakers {
			w.Notify(c)
		}
	}
	// settled waits until the history holds want signals and then a little
	// longer, so a copy that should not be there has had time to land.
	settled := func(step string, want int) {
		t.Helper()
		await.True(t, 10*time.Second, step, func() bool { return signals() >= want })
		time.Sleep(500 * time.Millisecond)
		if got := signals(); got != want {
			t.Fatalf("%s: %d signals in the history, want %d", step, got, want)
		}
	}
	job := transport.Ref{Kind: "Job", Namespace: "c1", Name: "validate"}
	change := func(digest, version string) transport.Change {
		return transport.Change{Adapter: "cl-job", OwnerKind: "Cluster", OwnerID: "c1", Object: job, What: transport.ChangeStatus, Digest: digest, Version: version}
	}
	bothSee(change("complete", "41"))
	settled("both workers saw the Job complete", 1)
	bothSee(change("complete", "57"))
	settled("both saw a later change to the same state", 2)
	bothSee(change("complete", ""))
	settled("both saw a change without a version", 4)
}
