// Typed references between resources: resolving them on create and patch,
// and refusing a deletion while something still links to its target.

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// checkReferrers refuses to delete a resource, or its subtree, that
// resources elsewhere still link to, naming them so the caller knows which
// references to drop or which removals to wait for. A referrer being
// deleted holds it too, until it is removed: its adapters may still need
// the target to clean up, and its stored link would otherwise name a
// resource that no longer exists. Once a resource is deleting no new link
// to it can be made, so its removal never leaves a reference dangling.
func (s *Service) checkReferrers(ctx context.Context, tx store.Tx, r *resource.Resource) error {
	const shown = 10
	below, err := s.descendants(ctx, tx, r)
	if err != nil {
		return err
	}
	ids := []string{r.ID}
	for i := range below {
		ids = append(ids, below[i].ID)
	}
	refs, total, err := tx.Referrers(ctx, ids, ids, shown)
	if err != nil || total == 0 {
		return err
	}
	names := make([]string, 0, len(refs))
	deleting := 0
	for i := range refs {
		state := ""
		if refs[i].DeletedTime != nil {
			state = ", being deleted"
			deleting++
		}
		names = append(names, fmt.Sprintf("%s %s (%s%s)", refs[i].Kind, refs[i].Name, refs[i].ID, state))
	}
	more := ""
	if total > int64(len(refs)) {
		more = fmt.Sprintf(" and %d more", total-int64(len(refs)))
	}
	what := ""
	if len(below) > 0 {
		what = " or a resource below it"
	}
	then := "remove their references or delete them first"
	if deleting > 0 {
		then += "; one being deleted holds it until it is removed"
	}
	return problem.Newf(http.StatusConflict, problem.CodeReferenced,
		"%s %s%s is still referenced by %d resource(s): %s%s; %s",
		r.Kind, r.ID, what, total, strings.Join(names, ", "), more, then)
}

// resolveReferences turns a create or PATCH's links into stored ones under
// the targets' row locks, so a target cannot start deleting between the
// check and the commit: a missing target is a 400, a deleting one a 409.
func (s *Service) resolveReferences(ctx context.Context, tx store.ResourceWrites, k resource.Kind, refs []ReferenceRequest) ([]resource.Link, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	targets := map[string]string{}
	for _, d := range k.References {
		targets[d.RefType] = d.TargetKind
	}
	links := make([]resource.Link, 0, len(refs))
	for i, ref := range refs {
		kind := targets[ref.RefType]
		t, err := tx.LockResource(ctx, kind, ref.ID)
		if errors.Is(err, store.ErrNotFound) {
			msg := fmt.Sprintf("reference %s points at %s %q, which does not exist", ref.RefType, kind, problem.Truncate(ref.ID, 64))
			return nil, problem.Validation(problem.FieldError{Field: fmt.Sprintf("references[%d].id", i), Value: problem.Truncate(ref.ID, 64),
				Constraint: "exists", Message: msg})
		}
		if err != nil {
			return nil, err
		}
		if t.DeletedTime != nil {
			return nil, problem.Newf(http.StatusConflict, problem.CodeBeingDeleted,
				"reference %s points at %s %s, which is being deleted; a new link to it cannot be made", ref.RefType, kind, ref.ID)
		}
		links = append(links, resource.Link{RefType: ref.RefType, Kind: kind, ID: t.ID, Href: t.Href})
	}
	return links, nil
}

func sameLinks(a, b []resource.Link) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].RefType != b[i].RefType || a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}
