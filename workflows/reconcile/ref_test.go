package reconcile

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// A default kind keeps the Ref it always had (recorded histories replay);
// a configured kind carries its path and parent kind to the workers.
func TestRefOf(t *testing.T) {
	np := RefOf(resource.Defaults(), resource.KindNodePool, "n1", "c1")
	if np != (Ref{Kind: resource.KindNodePool, ID: "n1", ParentID: "c1"}) {
		t.Fatalf("node pool ref %+v gained fields", np)
	}
	if ev := np.Event(3); ev.Href != resource.NodePoolHref("c1", "n1") || ev.OwnerReferences.Kind != resource.KindCluster || ev.OwnerReferences.Href != resource.ClusterHref("c1") {
		t.Fatalf("node pool event %+v", ev)
	}
	kinds, err := resource.NewKinds("", []resource.Kind{
		{Kind: "Channel", Plural: "channels"},
		{Kind: "Version", Plural: "versions", ParentKind: "Channel"},
	})
	if err != nil {
		t.Fatal(err)
	}
	v := RefOf(kinds, "Version", "v1", "ch1")
	ev := v.Event(2)
	if ev.Href != resource.BasePath+"/channels/ch1/versions/v1" || ev.Kind != "Version" || ev.Generation != 2 {
		t.Fatalf("version event %+v", ev)
	}
	if o := ev.OwnerReferences; o == nil || o.Kind != "Channel" || o.ID != "ch1" || o.Href != resource.BasePath+"/channels/ch1" {
		t.Fatalf("version owner %+v", o)
	}
	if ch := RefOf(kinds, "Channel", "ch1", "").Event(1); ch.Href != resource.BasePath+"/channels/ch1" || ch.OwnerReferences != nil {
		t.Fatalf("channel event %+v", ch)
	}
}
