package relay

import (
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Delivery is one call to Temporal for one resource, standing for one or
// more outbox rows.
type Delivery struct {
	Ref        reconcile.Ref
	Generation int64
	// Reason is the newest row's reason, or "removed" when any row says the
	// resource is gone (nothing is left to start a workflow for).
	Reason reconcile.Reason
	RowIDs []int64
	// Oldest is when the oldest row was written: the hand-off latency.
	Oldest time.Time
	// TraceParent is that of the traced row of the highest generation
	// (the newest among equals): the hand-off of folded rows continues the
	// trace of the request that asked for the generation it delivers.
	TraceParent string
	// Tenant is the resource's tenancy in canonical form ("" without
	// tenancy): its workflow's HyperFleetTenant.
	Tenant string
}

// Group folds outbox rows by resource, keeping the order in which resources
// first appear: bumps that piled up (a burst of PATCHes, an outage) become
// one signal at the newest generation.
func Group(rows []store.OutboxEntry) []Delivery {
	index := map[string]int{}
	var out []Delivery
	for _, row := range rows {
		key := row.Kind + "/" + row.ResourceID
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Delivery{
				Ref:    reconcile.Ref{Kind: row.Kind, ID: row.ResourceID, ParentID: row.ParentID},
				Oldest: row.CreatedTime,
			})
		}
		d := &out[i]
		d.RowIDs = append(d.RowIDs, row.ID)
		if row.TraceParent != "" && row.Generation >= d.Generation {
			d.TraceParent = row.TraceParent
		}
		d.Generation = max(d.Generation, row.Generation)
		if row.CreatedTime.Before(d.Oldest) {
			d.Oldest = row.CreatedTime
		}
		if d.Reason != reconcile.ReasonRemoved {
			d.Reason = reconcile.Reason(row.Reason)
		}
		if d.Ref.ParentID == "" {
			d.Ref.ParentID = row.ParentID
		}
		if d.Tenant == "" {
			d.Tenant = row.Tenant
		}
	}
	return out
}
