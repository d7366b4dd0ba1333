package reconcile

import (
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
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
