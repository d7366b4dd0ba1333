// Re-aggregating a locked resource's conditions from its statuses, and
// removing it when its deletion is complete.

package lifecycle

import (
	"context"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// settle re-aggregates a locked resource and either stores its conditions
// or, when deletion is complete, removes it.
func (s *Service) settle(ctx context.Context, tx store.Tx, r *resource.Resource, now time.Time) error {
	statuses, err := tx.Statuses(ctx, r.ID)
	if err != nil {
		return err
	}
	return s.settleWith(ctx, tx, r, statuses, now)
}

// settleWith is settle with the resource's statuses already in hand.
func (s *Service) settleWith(ctx context.Context, tx store.Tx, r *resource.Resource, statuses []resource.AdapterStatus, now time.Time) error {
	previous := r.Status.Conditions
	removable, err := s.aggregate(ctx, tx, r, statuses, now)
	if err != nil {
		return err
	}
	if removable {
		return s.remove(ctx, tx, r, now, "all adapters finalized")
	}
	if err := tx.UpdateState(ctx, r); err != nil {
		return err
	}
	return s.tellChildren(ctx, tx, r, previous, now)
}

// tellChildren asks a round of every child of a resource that has just
// become Reconciled and is itself waiting (not Reconciled, not being
// deleted): a child's adapters often wait for the parent (a node pool
// adapter checks its cluster's reports), and without the notice the child
// would go on only at its next backoff. Reconciled children are left
// alone: upstream-style adapters gate an extra run with a "Reconciled for
// more than N minutes" precondition and report Available=False when they
// skip, so a run of a Reconciled child would make it lapse. One outbox row
// per child, in the same transaction as the condition, so the notice is
// never lost.
func (s *Service) tellChildren(ctx context.Context, tx store.Tx, r *resource.Resource, previous []resource.Condition, now time.Time) error {
	if r.DeletedTime != nil || !s.kinds.HasChildren(r.Kind) || !aggregation.BecameReconciled(previous, r.Status.Conditions) {
		return nil
	}
	children, err := tx.WaitingChildren(ctx, r.ID)
	if err != nil {
		return err
	}
	for _, c := range children {
		e := store.OutboxEntry{Kind: c.Kind, ResourceID: c.ID, ParentID: r.ID, Generation: c.Generation,
			Reason: store.OutboxParentReconciled, CreatedTime: now, Tenant: c.Tenant}
		if err := tx.AppendOutbox(ctx, e); err != nil {
			return err
		}
	}
	if len(children) > 0 {
		s.logFor(r).Debug().Int("children", len(children)).Msg("became Reconciled: its waiting children go on")
	}
	return nil
}

// settleParent re-evaluates a deleting parent after one of its children
// changed: the last child's removal may complete the parent's deletion.
func (s *Service) settleParent(ctx context.Context, tx store.Tx, parent *resource.Resource, now time.Time) error {
	if parent.DeletedTime == nil {
		return nil
	}
	return s.settle(ctx, tx, parent, now)
}

// aggregate recomputes a locked resource's conditions from its statuses in
// place and reports whether its deletion is complete.
func (s *Service) aggregate(ctx context.Context, tx store.Hierarchy, r *resource.Resource, statuses []resource.AdapterStatus, now time.Time) (bool, error) {
	// Children matter only to a deleting resource (it waits for them to
	// go); counting them on every status report was a round trip for
	// nothing.
	children := 0
	if r.DeletedTime != nil && s.kinds.HasChildren(r.Kind) {
		var err error
		if children, err = tx.CountChildren(ctx, r.ID); err != nil {
			return false, err
		}
	}
	// Condition rules see the reports of registered adapters only, as the
	// fixed conditions do: anyone may report under any other name.
	rules, err := s.rules.Evaluate(ctx, r.Kind, r.Generation, s.registeredStatuses(r.Kind, statuses))
	if err != nil {
		return false, err
	}
	res := aggregation.Compute(aggregation.Input{
		Kind: r.Kind, Generation: r.Generation, Deleting: r.DeletedTime != nil, Children: children,
		Registered: s.registered[r.Kind], Statuses: statuses, Previous: r.Status.Conditions, Now: now,
		Rules: rules,
	})
	r.Status.Conditions = res.Conditions
	return res.Removable, nil
}
