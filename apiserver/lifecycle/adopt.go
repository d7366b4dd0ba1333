// Adoption: a system caller gives a tenancy to a resource stored before
// the tenancy file was in place, which no tenant could see or change.

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// AssignTenancy gives a resource without a tenancy the tenancy t (already
// validated against the tenancy file), with its whole subtree in the same
// transaction: a child has its parent's tenancy, so a child kind is never
// adopted on its own. Assigning the tenancy it already has changes
// nothing; one that has another is a 409 naming it (moving a resource
// between tenancies is not adoption), and a name its tenancy already
// uses a 409 naming the name. A resource being deleted is adopted too, so
// that its tenant can force-delete it. Generation, spec and conditions are
// unchanged: adapters have nothing to do.
func (s *Service) AssignTenancy(ctx context.Context, ref Ref, t map[string]string, actor string) (*resource.Resource, error) {
	k, err := s.kind(ref.Kind)
	if err != nil {
		return nil, err
	}
	if k.ParentKind != "" {
		return nil, problem.Newf(http.StatusConflict, problem.CodeHasTenancy,
			"a %s has its %s's tenancy: assign the tenancy to the %s, which carries its %s along", k.Kind, k.ParentKind, strings.ToLower(k.ParentKind), pluralNoun(k))
	}
	key := resource.TenancyKey(t)
	if key == "" {
		return nil, problem.Validation(problem.FieldError{Field: "(body)", Constraint: "tenancy", Message: "the tenancy is empty; send a value per dimension"})
	}
	var out *resource.Resource
	err = s.inTx(ctx, func(tx store.Tx) error {
		r, err := s.lock(ctx, tx, ref)
		if err != nil {
			return err
		}
		out = r
		switch current := resource.TenancyKey(r.Tenancy); current {
		case key:
			return nil
		case "":
		default:
			return hasTenancy(r, key)
		}
		below, err := s.descendants(ctx, tx, r)
		if err != nil {
			return err
		}
		subtree := []*resource.Resource{r}
		for i := range below {
			if resource.TenancyKey(below[i].Tenancy) != "" {
				return hasTenancy(&below[i], key)
			}
			subtree = append(subtree, &below[i])
		}
		now := s.clock()
		for _, d := range subtree {
			d.Tenancy = maps.Clone(t)
			d.UpdatedTime, d.UpdatedBy = now, actor
		}
		err = tx.AssignTenancy(ctx, subtree...)
		if errors.Is(err, store.ErrNameConflict) {
			return problem.Newf(http.StatusConflict, problem.CodeNameConflict,
				"a %s named %q already exists in the tenancy %s; nothing was changed (names are unique per tenancy): its tenant can delete its own first, or the resource can be given another tenancy",
				r.Kind, r.Name, key).
				WithErrors(problem.FieldError{Field: "name", Value: r.Name, Constraint: "unique", Message: "name is already in use in the tenancy " + key})
		}
		return err
	})
	if err != nil {
		return nil, asProblem(err)
	}
	s.logFor(out).Info().Str("actor", actor).Str("tenant", key).Msg("tenancy assigned")
	return out, nil
}

// hasTenancy refuses to assign want to a resource that has another
// tenancy, naming the one it has.
func hasTenancy(r *resource.Resource, want string) *problem.Problem {
	current := resource.TenancyKey(r.Tenancy)
	return problem.Newf(http.StatusConflict, problem.CodeHasTenancy,
		"%s %s already has the tenancy %s, so it cannot be given %s: a tenancy is assigned only to a resource stored without one, and never moves",
		r.Kind, r.ID, current, want).
		WithErrors(problem.FieldError{Field: "tenancy", Value: r.Tenancy, Constraint: "unassigned",
			Message: fmt.Sprintf("the resource's tenancy is %s", current)})
}
