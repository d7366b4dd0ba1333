package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/relay"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

func TestGroupFoldsRowsPerResource(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rows := []store.OutboxEntry{
		{ID: 1, Kind: "Cluster", ResourceID: "c1", Generation: 1, Reason: "created", CreatedTime: t0},
		{ID: 2, Kind: "NodePool", ResourceID: "np1", ParentID: "c1", Generation: 1, Reason: "created", CreatedTime: t0.Add(time.Second)},
		{ID: 3, Kind: "Cluster", ResourceID: "c1", Generation: 3, Reason: "updated", CreatedTime: t0.Add(2 * time.Second), TraceParent: "tp-3"},
		{ID: 4, Kind: "Cluster", ResourceID: "c1", Generation: 2, Reason: "updated", CreatedTime: t0.Add(3 * time.Second), TraceParent: "tp-4"},
		{ID: 5, Kind: "NodePool", ResourceID: "np1", ParentID: "c1", Generation: 2, Reason: "removed", CreatedTime: t0.Add(4 * time.Second)},
		{ID: 6, Kind: "NodePool", ResourceID: "np1", ParentID: "c1", Generation: 3, Reason: "deleting", CreatedTime: t0.Add(5 * time.Second)},
	}
	got := relay.Group(rows)
	want := []relay.Delivery{
		// The traceparent of the row that asked for generation 3: the
		// hand-off continues the trace of the request it delivers.
		{Ref: reconcile.Ref{Kind: "Cluster", ID: "c1"}, Generation: 3, Reason: "updated", RowIDs: []int64{1, 3, 4}, Oldest: t0, TraceParent: "tp-3"},
		{Ref: reconcile.Ref{Kind: "NodePool", ID: "np1", ParentID: "c1"}, Generation: 3, Reason: "removed", RowIDs: []int64{2, 5, 6}, Oldest: t0.Add(time.Second)},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("Group =\n%+v\nwant\n%+v", got, want)
	}
	if len(relay.Group(nil)) != 0 {
		t.Error("no rows, no deliveries")
	}
}
