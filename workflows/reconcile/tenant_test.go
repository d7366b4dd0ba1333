package reconcile

import (
	"errors"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// HyperFleetTenant is registered with the others (EnsureSearchAttributes
// registers SearchAttributes()), set at start only for a resource with a
// tenancy, and leaves the attributes the workflow reads alone.
func TestTenantStartAttribute(t *testing.T) {
	if typ, ok := SearchAttributes()[AttrTenant.GetName()]; !ok || typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Errorf("HyperFleetTenant in SearchAttributes(): %v %v", typ, ok)
	}
	ref := Ref{Kind: "Cluster", ID: "c-1"}
	with := TenantStartAttributes(ref, 3, "org=acme")
	if v, ok := with.GetKeyword(AttrTenant); !ok || v != "org=acme" {
		t.Errorf("TenantStartAttributes: HyperFleetTenant %q %v", v, ok)
	}
	without := StartAttributes(ref, 3)
	if _, ok := without.GetKeyword(AttrTenant); ok {
		t.Error("StartAttributes (no tenancy) sets HyperFleetTenant")
	}
	if with.Size() != without.Size()+1 {
		t.Errorf("%d attributes with a tenancy, %d without", with.Size(), without.Size())
	}
	gen, _ := with.GetInt64(AttrGeneration)
	kind, _ := with.GetKeyword(AttrKind)
	if gen != 3 || kind != "Cluster" {
		t.Errorf("the other attributes changed: generation %d, kind %q", gen, kind)
	}
}

// The workflow knows its resource's tenancy: from its input, or from
// HyperFleetTenant when the input has none. It shows in the state query
// and goes to the next run with continue-as-new.
func TestWorkflowKnowsItsTenancy(t *testing.T) {
	t.Run("from the input, carried over", func(t *testing.T) {
		h := newHarness(t)
		h.states = []ResourceState{pendingAt(1), pendingAt(1)}
		var during View
		h.env.RegisterDelayedCallback(func() { during = h.view() }, 500*time.Millisecond)
		h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}, Options: Options{RoundsPerRun: 2}, Tenant: "org=acme"})
		if during.Tenant != "org=acme" {
			t.Errorf("view's tenant = %q, want org=acme", during.Tenant)
		}
		var can *workflow.ContinueAsNewError
		if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
			t.Fatalf("workflow ended with %v, want continue-as-new", err)
		}
		var next Input
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
			t.Fatal(err)
		}
		if next.Tenant != "org=acme" {
			t.Errorf("continued with tenant %q, want org=acme", next.Tenant)
		}
	})
	t.Run("from the search attribute", func(t *testing.T) {
		h := newHarness(t)
		h.states = []ResourceState{pendingAt(1), gone}
		if err := h.env.SetTypedSearchAttributesOnStart(TenantStartAttributes(cluster, 1, "org=globex")); err != nil {
			t.Fatal(err)
		}
		var during View
		h.env.RegisterDelayedCallback(func() { during = h.view() }, 500*time.Millisecond)
		h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
		if during.Tenant != "org=globex" {
			t.Errorf("view's tenant = %q, want org=globex", during.Tenant)
		}
	})
	t.Run("none", func(t *testing.T) {
		h := newHarness(t)
		h.states = []ResourceState{pendingAt(1), gone}
		var during View
		h.env.RegisterDelayedCallback(func() { during = h.view() }, 500*time.Millisecond)
		h.exec(Input{Ref: cluster, Generation: 1, Adapters: []string{"validation"}})
		if during.Tenant != "" {
			t.Errorf("view's tenant = %q without tenancy", during.Tenant)
		}
	})
}
