//go:build integration

package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// tenantOf reads a workflow's HyperFleetTenant ("" when it has none).
func (w *world) tenantOf(kind, id string) string {
	w.t.Helper()
	d, err := w.tc.DescribeWorkflowExecution(context.Background(), reconcile.WorkflowID(kind, id), "")
	if err != nil {
		w.t.Fatal(err)
	}
	p, ok := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[reconcile.AttrTenant.GetName()]
	if !ok {
		return ""
	}
	var v string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		w.t.Fatal(err)
	}
	return v
}

// A tenant's resource's workflow starts with HyperFleetTenant naming its
// tenancy (a node pool's is its cluster's), on the outbox's hand-off and
// on the start-up pass's, so an operator lists one tenant's workflows in
// the UI; a resource of no tenancy gets none.
func TestWorkflowsCarryTheTenancy(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	acme := tenancy.WithCaller(ctx, tenancy.Caller{Tenancy: map[string]string{"org": "acme", "project": "web"}, Key: "org=acme,project=web"})
	c, err := w.svc.Create(acme, resource.KindCluster, "", &lifecycle.CreateRequest{Kind: resource.KindCluster, Name: "tenant-cluster", Spec: json.RawMessage(`{}`)}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	np, err := w.svc.Create(acme, resource.KindNodePool, c.ID, &lifecycle.CreateRequest{Kind: resource.KindNodePool, Name: "workers", Spec: json.RawMessage(`{}`)}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	plain := w.createCluster("no-tenant")
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind, id, want string
	}{
		{resource.KindCluster, c.ID, "org=acme,project=web"},
		{resource.KindNodePool, np.ID, "org=acme,project=web"},
		{resource.KindCluster, plain.ID, ""},
	} {
		if got := w.tenantOf(tc.kind, tc.id); got != tc.want {
			t.Errorf("%s %s: HyperFleetTenant %q, want %q", tc.kind, tc.id, got, tc.want)
		}
	}
	// The operator's query: one tenant's workflows (visibility is
	// eventually consistent).
	query := fmt.Sprintf("%s = 'org=acme,project=web'", reconcile.AttrTenant.GetName())
	await.True(t, 10*time.Second, "the tenant's two workflows are not listed by HyperFleetTenant", func() bool {
		resp, err := w.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.GetExecutions()) == 2
	})

	// The start-up pass (a workflow Temporal lost) starts it with the
	// tenancy too.
	if err := w.tc.TerminateWorkflow(ctx, reconcile.WorkflowID(resource.KindCluster, c.ID), "", "lost"); err != nil {
		t.Fatal(err)
	}
	lost, err := w.svc.Create(acme, resource.KindCluster, "", &lifecycle.CreateRequest{Kind: resource.KindCluster, Name: "never-handed", Spec: json.RawMessage(`{}`)}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := w.store.PendingOutbox(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range pending {
		if p.Tenant != "org=acme,project=web" {
			t.Errorf("outbox row of %s carries tenant %q", p.ResourceID, p.Tenant)
		}
		ids = append(ids, p.ID)
	}
	if err := w.store.AckOutbox(ctx, ids...); err != nil { // as if the hand-off were lost
		t.Fatal(err)
	}
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.tenantOf(resource.KindCluster, lost.ID); got != "org=acme,project=web" {
		t.Errorf("a workflow the start-up pass started: HyperFleetTenant %q", got)
	}
}
