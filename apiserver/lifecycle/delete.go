// Deleting: the soft delete that cascades down the subtree, the removal
// once adapters have finalized, and force-delete for a stuck deletion.

package lifecycle

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Delete soft-deletes a resource (and a cluster's node pools), bumping the
// generation so adapters clean up. A second call changes nothing. When no
// adapter has anything to finalize the resource is removed at once.
func (s *Service) Delete(ctx context.Context, ref Ref, actor string) (*resource.Resource, error) {
	var out *resource.Resource
	err := s.inTx(ctx, func(tx store.Tx) error {
		parent, r, err := s.lockWithParent(ctx, tx, ref)
		if err != nil {
			return err
		}
		out = r
		if r.DeletedTime != nil {
			return nil
		}
		if err := s.checkReferrers(ctx, tx, r); err != nil {
			return err
		}
		now := s.clock()
		if err := s.markSubtree(ctx, tx, r, actor, now); err != nil {
			return err
		}
		if parent != nil {
			return s.settleParent(ctx, tx, parent, now)
		}
		return nil
	})
	if err != nil {
		return nil, asProblem(err)
	}
	s.logFor(out).Info().Str("actor", actor).Msg("deletion requested")
	return out, nil
}

// markSubtree marks a resource and, children first, its live descendants
// deleting, so a cascade reaches any depth.
func (s *Service) markSubtree(ctx context.Context, tx store.Tx, r *resource.Resource, actor string, now time.Time) error {
	if s.kinds.HasChildren(r.Kind) {
		children, err := tx.Children(ctx, r.ID)
		if err != nil {
			return err
		}
		if err := s.checkRestrict(r, children); err != nil {
			return err
		}
		for i := range children {
			child := &children[i]
			if child.DeletedTime != nil {
				continue
			}
			if err := s.markSubtree(ctx, tx, child, actor, now); err != nil {
				return err
			}
		}
	}
	return s.markDeleting(ctx, tx, r, actor, now)
}

// checkRestrict refuses to delete a resource that has live children of a
// kind declared on_parent_delete: restrict, naming them so the caller knows
// what to delete first. Children already being deleted do not hold it.
func (s *Service) checkRestrict(r *resource.Resource, children []resource.Resource) error {
	const shown = 10
	var names []string
	n := 0
	for i := range children {
		c := &children[i]
		k, ok := s.kinds.Get(c.Kind)
		if c.DeletedTime != nil || !ok || k.OnParentDelete != resource.OnParentDeleteRestrict {
			continue
		}
		n++
		if len(names) < shown {
			names = append(names, fmt.Sprintf("%s %s (%s)", c.Kind, c.Name, c.ID))
		}
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > shown {
		more = fmt.Sprintf(" and %d more", n-shown)
	}
	return problem.Newf(http.StatusConflict, problem.CodeHasChildren,
		"%s %s still has %d live child resource(s) that restrict its deletion: %s%s; delete them first",
		r.Kind, r.ID, n, strings.Join(names, ", "), more)
}

// markDeleting stamps deleted_time, bumps the generation, re-aggregates and
// removes the resource if nothing is left to wait for.
func (s *Service) markDeleting(ctx context.Context, tx store.Tx, r *resource.Resource, actor string, now time.Time) error {
	r.DeletedTime, r.DeletedBy = &now, actor
	r.Generation++
	if err := tx.AppendOutbox(ctx, outboxFor(r, store.OutboxDeleting, now)); err != nil {
		return err
	}
	return s.settle(ctx, tx, r, now)
}

func (s *Service) remove(ctx context.Context, tx store.Tx, r *resource.Resource, now time.Time, why string) error {
	children, err := s.descendants(ctx, tx, r)
	if err != nil {
		return err
	}
	if err := tx.RemoveResource(ctx, r.ID); err != nil {
		return err
	}
	for i := range children {
		if err := tx.AppendOutbox(ctx, outboxFor(&children[i], store.OutboxRemoved, now)); err != nil {
			return err
		}
	}
	if err := tx.AppendOutbox(ctx, outboxFor(r, store.OutboxRemoved, now)); err != nil {
		return err
	}
	s.logFor(r).Info().Str("why", why).Int("children", len(children)).Msg("removed")
	return nil
}

// descendants lists a resource's subtree below it, each child after its
// parent: the foreign keys remove them with it, and each needs its
// "removed" outbox entry.
func (s *Service) descendants(ctx context.Context, tx store.Hierarchy, r *resource.Resource) ([]resource.Resource, error) {
	if !s.kinds.HasChildren(r.Kind) {
		return nil, nil
	}
	children, err := tx.Children(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	out := children
	for i := range children {
		below, err := s.descendants(ctx, tx, &children[i])
		if err != nil {
			return nil, err
		}
		out = append(out, below...)
	}
	return out, nil
}

// ForceDelete removes an already soft-deleted resource and its subtree at
// once: the escape hatch for a deletion stuck on an adapter.
func (s *Service) ForceDelete(ctx context.Context, ref Ref, req *ForceDeleteRequest, actor string) error {
	if errs := ValidateForceDelete(req); len(errs) > 0 {
		return problem.Validation(errs...)
	}
	err := s.inTx(ctx, func(tx store.Tx) error {
		parent, r, err := s.lockWithParent(ctx, tx, ref)
		if err != nil {
			return err
		}
		if r.DeletedTime == nil {
			return problem.Newf(http.StatusConflict, problem.CodeNotDeleted,
				"%s %s is not being deleted; DELETE it first, force-delete only clears a stuck deletion", ref.Kind, ref.ID)
		}
		if err := s.checkReferrers(ctx, tx, r); err != nil {
			return err
		}
		now := s.clock()
		if err := s.remove(ctx, tx, r, now, "force-delete: "+req.Reason); err != nil {
			return err
		}
		if parent != nil {
			return s.settleParent(ctx, tx, parent, now)
		}
		return nil
	})
	if err != nil {
		return asProblem(err)
	}
	s.log.Warn().Str("kind", ref.Kind).Str("resource_id", ref.ID).Str("actor", actor).Str("reason", req.Reason).Msg("force-deleted")
	return nil
}
