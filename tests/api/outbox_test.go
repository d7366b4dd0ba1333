package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Every generation bump (create, spec or label PATCH, DELETE, and the final
// removal) leaves one outbox row written in the same transaction; a PATCH
// that changes nothing and rejected requests leave none.
func TestOutboxRowsForEveryBump(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.createCluster("outboxed")
		np := e.createNodePool(c.ID, "pool")
		e.do("PATCH", c.Href, `{"labels":{"a":"b"}}`).expect(200)
		e.do("PATCH", c.Href, `{"spec":{"v":2}}`).expect(200)
		e.do("PATCH", c.Href, `{"spec":{"v":2}}`).expect(200) // no change
		e.do("PATCH", c.Href, `{"spec":[]}`).problem(400, "HYPERFLEET-VAL-001")
		e.do("DELETE", c.Href, nil).expect(202)
		e.do("DELETE", c.Href, nil).expect(202) // idempotent
		e.report(np, report("np-configmap", 2, "False", "Finalized", "True")).expect(201)
		e.report(c, report("validation", 4, "False", "Finalized", "True")).expect(201)
		e.report(c, report("landing-zone", 4, "False", "Finalized", "True")).expect(201)

		entries, err := e.app.Store.PendingOutbox(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, en := range entries {
			who := "cluster"
			if en.ResourceID == np.ID {
				who = "nodepool"
				if en.ParentID != c.ID {
					t.Errorf("node pool entry without its parent: %+v", en)
				}
			}
			got = append(got, fmt.Sprintf("%s:%d:%s", who, en.Generation, en.Reason))
		}
		want := "cluster:1:created nodepool:1:created cluster:2:updated cluster:3:updated nodepool:2:deleting cluster:4:deleting nodepool:2:removed cluster:4:removed"
		if strings.Join(got, " ") != want {
			t.Errorf("outbox =\n  %s\nwant\n  %s", strings.Join(got, " "), want)
		}
		ids := make([]int64, 0, len(entries))
		for _, en := range entries {
			ids = append(ids, en.ID)
		}
		if err := e.app.Store.AckOutbox(ctx, ids...); err != nil {
			t.Fatal(err)
		}
		if left, _ := e.app.Store.PendingOutbox(ctx, 100); len(left) != 0 {
			t.Errorf("%d entries left after ack", len(left))
		}
	})
}

// Contract: when a cluster becomes Reconciled (the first time, again after
// it was not, or at a newer generation), each of its node pools that is
// waiting (neither Reconciled nor being deleted) gets a "parent-reconciled"
// outbox row at its own generation, in the same transaction. Reconciled
// node pools are left alone, and a report that leaves the cluster
// Reconciled at the same generation writes none.
func TestClusterBecomingReconciledTellsItsWaitingNodePools(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.createCluster("parent")
		waiting := e.createNodePool(c.ID, "waiting")
		done := e.createNodePool(c.ID, "done")
		going := e.createNodePool(c.ID, "going")
		e.report(done, report("np-configmap", 1, "True")).expect(201)
		e.do("DELETE", going.Href, nil).expect(202)
		pending := func() string {
			t.Helper()
			entries, err := e.app.Store.PendingOutbox(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			ids := make([]int64, 0, len(entries))
			for _, en := range entries {
				who := map[string]string{c.ID: "cluster", waiting.ID: "waiting", done.ID: "done", going.ID: "going"}[en.ResourceID]
				got = append(got, fmt.Sprintf("%s:%d:%s", who, en.Generation, en.Reason))
				ids = append(ids, en.ID)
			}
			if err := e.app.Store.AckOutbox(ctx, ids...); err != nil {
				t.Fatal(err)
			}
			return strings.Join(got, " ")
		}
		pending()

		e.report(c, report("validation", 1, "True")).expect(201)
		if got := pending(); got != "" {
			t.Errorf("one adapter of two: outbox %q, want nothing", got)
		}
		e.report(c, report("landing-zone", 1, "True")).expect(201)
		if got := pending(); got != "waiting:1:parent-reconciled" {
			t.Errorf("cluster Reconciled: outbox %q, want only the waiting node pool told, at its generation", got)
		}
		e.report(c, report("landing-zone", 1, "True")).expect(201)
		if got := pending(); got != "" {
			t.Errorf("same generation reported again: outbox %q, want nothing", got)
		}

		e.do("PATCH", c.Href, `{"spec":{"v":2}}`).expect(200)
		e.report(c, report("validation", 2, "True")).expect(201)
		e.report(c, report("landing-zone", 2, "True")).expect(201)
		if got := pending(); got != "cluster:2:updated waiting:1:parent-reconciled" {
			t.Errorf("generation 2 took effect: outbox %q, want the update, then the waiting node pool told", got)
		}
	})
}
