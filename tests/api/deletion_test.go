package api

import (
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// CONTRACT.md "Deletion": soft delete with cascade, idempotence, 409s,
// Finalized-driven removal with children first, name reuse.
func TestDeletionLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("doomed")
		np1, np2 := e.createNodePool(c.ID, "pool-a"), e.createNodePool(c.ID, "pool-b")
		e.do("PATCH", np2.Href, `{"spec":{"replicas":9}}`).expect(200) // np2 at generation 2

		r := e.do("DELETE", c.Href, nil).expect(202).resource()
		if r.DeletedTime == nil || r.DeletedBy != "system@hyperfleet.local" || r.Generation != 2 {
			t.Fatalf("deleted cluster = gen %d deleted %v by %q", r.Generation, r.DeletedTime, r.DeletedBy)
		}
		if got := cond(r, "Ready"); got != "False/AwaitingChildDeletion/2" {
			t.Errorf("Ready while deleting = %s", got)
		}
		for _, np := range []struct {
			r   resource.Resource
			gen int64
		}{{np1, 2}, {np2, 3}} {
			got := e.do("GET", np.r.Href, nil).expect(200).resource()
			if got.DeletedTime == nil || got.Generation != np.gen {
				t.Errorf("node pool %s: deleted %v gen %d, want gen %d", got.Name, got.DeletedTime, got.Generation, np.gen)
			}
		}
		// Idempotent.
		again := e.do("DELETE", c.Href, nil).expect(202).resource()
		if again.Generation != 2 || !again.DeletedTime.Equal(*r.DeletedTime) {
			t.Errorf("second DELETE changed gen %d / deleted_time", again.Generation)
		}
		e.do("DELETE", np1.Href, nil).expect(202)
		if g := e.do("GET", np1.Href, nil).expect(200).resource().Generation; g != 2 {
			t.Errorf("DELETE of an already deleting node pool bumped it to %d", g)
		}
		// No changes while deleting; no new children; the name stays taken.
		e.do("PATCH", c.Href, `{"labels":{"a":"b"}}`).problem(409, "HYPERFLEET-CNF-002")
		e.do("PATCH", np1.Href, `{"spec":{}}`).problem(409, "HYPERFLEET-CNF-002")
		e.do("POST", c.Href+"/nodepools", nodePoolBody("late")).problem(409, "HYPERFLEET-CNF-002")
		e.do("POST", base+"/clusters", clusterBody("doomed")).problem(409, "HYPERFLEET-CNF-001")

		// Cluster adapters finalize first: the cluster waits for its node pools.
		e.report(c, report("validation", 2, "False", "Finalized", "True")).expect(201)
		e.report(c, report("landing-zone", 2, "False", "Finalized", "True")).expect(201)
		e.expectCond(c.ID, "Ready", "False/AwaitingChildDeletion/2")

		// Finalized at a superseded generation does not count.
		e.report(np2, report("np-configmap", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", np2.Href, nil).expect(200)

		e.report(np1, report("np-configmap", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", np1.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.expectCond(c.ID, "Ready", "False/AwaitingChildDeletion/2")

		// The last node pool's removal completes the cluster's deletion.
		e.report(np2, report("np-configmap", 3, "False", "Finalized", "True")).expect(201)
		e.do("GET", np2.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", c.Href+"/statuses", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("PUT", statusPath(c), report("validation", 2, "False", "Finalized", "True")).problem(404, "HYPERFLEET-NTF-001")

		// The name is free again.
		reborn := e.createCluster("doomed")
		if reborn.ID == c.ID || reborn.Generation != 1 {
			t.Errorf("reused name got %+v", reborn)
		}
	})
}

func TestDeletionNodePoolsFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("ordered")
		np := e.createNodePool(c.ID, "pool")
		e.do("DELETE", c.Href, nil).expect(202)
		e.report(np, report("np-configmap", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", np.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		r := e.expectCond(c.ID, "Ready", "False/AwaitingFinalization/2")
		ready, _ := r.Condition("Ready")
		if !strings.Contains(ready.Message, "validation") || !strings.Contains(ready.Message, "landing-zone") {
			t.Errorf("Ready message %q does not name the adapters it waits for", ready.Message)
		}
		e.report(c, report("validation", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", c.Href, nil).expect(200)
		// Finalized=False keeps it.
		e.report(c, report("landing-zone", 2, "False", "Finalized", "False")).expect(201)
		e.do("GET", c.Href, nil).expect(200)
		e.report(c, report("landing-zone", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
	})
}

func TestDeleteNodePoolOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("keeper")
		np := e.createNodePool(c.ID, "pool")
		r := e.do("DELETE", np.Href, nil).expect(202).resource()
		if r.DeletedTime == nil || r.Generation != 2 {
			t.Errorf("deleted node pool = %+v", r)
		}
		if got := e.getCluster(c.ID); got.DeletedTime != nil || got.Generation != 1 {
			t.Errorf("deleting a node pool touched its cluster: %+v", got)
		}
		e.report(np, report("np-configmap", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", np.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.createNodePool(c.ID, "pool") // name reusable under the same cluster
	})
}

// With no adapters registered there is nothing to finalize: DELETE removes.
func TestDeleteWithoutAdapters(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("lonely")
		e.createNodePool(c.ID, "pool")
		r := e.do("DELETE", c.Href, nil).expect(202).resource()
		if r.DeletedTime == nil {
			t.Errorf("DELETE returned %+v", r)
		}
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		var l resource.List[resource.Resource]
		e.do("GET", base+"/nodepools", nil).expect(200).into(&l)
		if l.Total != 0 {
			t.Errorf("%d node pools left", l.Total)
		}
	}, withAdapters([]string{}, []string{}))
}

func TestForceDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("stuck")
		np := e.createNodePool(c.ID, "pool")
		e.report(c, report("validation", 1, "True")).expect(201)

		e.do("POST", c.Href+"/force-delete", `{"reason":"adapter gone"}`).problem(409, "HYPERFLEET-CNF-003")
		e.do("DELETE", c.Href, nil).expect(202)
		for _, body := range []string{`{}`, `{"reason":""}`, `{"reason":"   "}`, `{"reason":"` + strings.Repeat("x", 1025) + `"}`} {
			p := e.do("POST", c.Href+"/force-delete", body).problem(400, "HYPERFLEET-VAL-001")
			if !p.names("reason") {
				t.Errorf("%s: problem names %v", body, p.fields())
			}
		}
		e.do("POST", c.Href+"/force-delete", `{"reason":"x","extra":1}`).problem(400, "HYPERFLEET-VAL-002")
		e.do("GET", c.Href, nil).expect(200) // bad requests changed nothing

		e.do("POST", c.Href+"/force-delete", `{"reason":"`+strings.Repeat("y", 1024)+`"}`).expect(204)
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", np.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("POST", c.Href+"/force-delete", `{"reason":"again"}`).problem(404, "HYPERFLEET-NTF-001")
		e.createCluster("stuck")
	})
}

func TestForceDeleteNodePool(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("parent")
		np := e.createNodePool(c.ID, "pool")
		e.do("DELETE", c.Href, nil).expect(202)
		// The cluster's adapters have finalized; only the stuck node pool holds it.
		e.report(c, report("validation", 2, "False", "Finalized", "True")).expect(201)
		e.report(c, report("landing-zone", 2, "False", "Finalized", "True")).expect(201)
		e.do("GET", c.Href, nil).expect(200)
		e.do("POST", np.Href+"/force-delete", `{"reason":"node pool adapter crashed"}`).expect(204)
		e.do("GET", np.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
	})
}
