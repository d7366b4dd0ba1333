// Patching a resource's spec, labels and references, bumping the
// generation only on a semantic change.

package lifecycle

import (
	"context"
	"net/http"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Patch applies spec and label changes. A semantic change of either bumps
// the generation once and requests a reconcile (adapters render labels into
// what they apply); no change at all writes nothing.
func (s *Service) Patch(ctx context.Context, ref Ref, req *PatchRequest, actor string) (*resource.Resource, error) {
	k, err := s.kind(ref.Kind)
	if err != nil {
		return nil, err
	}
	if errs := ValidatePatchFor(k, req); len(errs) > 0 {
		return nil, problem.Validation(errs...)
	}
	if req.Spec != nil {
		if err := s.validateSpec(ref.Kind, req.Spec); err != nil {
			return nil, err
		}
	}
	var out *resource.Resource
	err = s.inTx(ctx, func(tx store.Tx) error {
		r, err := s.lock(ctx, tx, ref)
		if err != nil {
			return err
		}
		if r.DeletedTime != nil {
			return problem.Newf(http.StatusConflict, problem.CodeBeingDeleted, "%s %s is being deleted and can no longer be changed", ref.Kind, ref.ID)
		}
		specChanged := req.Spec != nil && !SameJSON(r.Spec, req.Spec)
		labelsChanged := req.Labels != nil && !sameLabels(r.Labels, *req.Labels)
		var links []resource.Link
		if req.References != nil {
			if links, err = s.resolveReferences(ctx, tx, k, *req.References); err != nil {
				return err
			}
		}
		refsChanged := req.References != nil && !sameLinks(r.References, links)
		out = r
		if !specChanged && !labelsChanged && !refsChanged {
			return nil
		}
		now := s.clock()
		if labelsChanged {
			r.Labels = *req.Labels
		}
		if specChanged {
			r.Spec = req.Spec
		}
		if refsChanged {
			r.References = links
			if err := tx.SetReferences(ctx, r.ID, links); err != nil {
				return err
			}
		}
		r.UpdatedTime, r.UpdatedBy = now, actor
		r.Generation++
		statuses, err := tx.Statuses(ctx, r.ID)
		if err != nil {
			return err
		}
		if _, err := s.aggregate(ctx, tx, r, statuses, now); err != nil {
			return err
		}
		if err := tx.AppendOutbox(ctx, outboxFor(r, store.OutboxUpdated, now)); err != nil {
			return err
		}
		return tx.UpdateResource(ctx, r)
	})
	if err != nil {
		return nil, asProblem(err)
	}
	s.logFor(out).Info().Str("actor", actor).Msg("patched")
	return out, nil
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
