// Reads: getting one resource and listing a page of them, searched and
// ordered, within what the caller's tenancy may see (the store's scope).

package lifecycle

import (
	"context"
	"errors"
	"net/http"

	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// GetAny returns a resource of any kind by id (GET /resources/{id}).
func (s *Service) GetAny(ctx context.Context, id string) (*resource.Resource, error) {
	r, err := s.store.GetResource(ctx, "", id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.NotFound("Resource", id)
	}
	if err != nil {
		return nil, problem.Internal(err)
	}
	if err := s.markQueued(ctx, r); err != nil {
		return nil, problem.Internal(err)
	}
	return r, nil
}

// Get returns a resource; a node pool must belong to the cluster in its path.
func (s *Service) Get(ctx context.Context, ref Ref) (*resource.Resource, error) {
	r, err := s.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := s.markQueued(ctx, r); err != nil {
		return nil, problem.Internal(err)
	}
	return r, nil
}

// get is Get as the other operations need it: the stored resource.
func (s *Service) get(ctx context.Context, ref Ref) (*resource.Resource, error) {
	r, err := s.store.GetResource(ctx, ref.Kind, ref.ID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !belongs(r, ref) {
		return nil, notFound(ref)
	}
	if err != nil {
		return nil, problem.Internal(err)
	}
	return r, nil
}

// markQueued says, in the conditions of each resource that is not
// Reconciled and whose change waits in the outbox, that it waits for
// admission (ShowAdmission). A Reconciled resource is not looked up.
func (s *Service) markQueued(ctx context.Context, rs ...*resource.Resource) error {
	if !s.showAdmission.Load() {
		return nil
	}
	var ids []string
	for _, r := range rs {
		if c, ok := r.Condition(resource.ConditionReady); !ok || c.Status != resource.StatusTrue {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	queued, err := s.store.Queued(ctx, ids)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if queued[r.ID] {
			r.Status.Conditions = aggregation.AwaitingAdmission(r.Status.Conditions)
		}
	}
	return nil
}

func belongs(r *resource.Resource, ref Ref) bool {
	if ref.ParentID == "" {
		return true
	}
	return r.OwnerReferences != nil && r.OwnerReferences.ID == ref.ParentID
}

// ListParams select a page of a list endpoint.
type ListParams struct {
	Kind     string // "" lists every kind (/resources)
	ParentID string // children of one parent; the parent must exist
	Search   string
	Order    []search.OrderTerm
	Page     int
	Size     int
	// After, when set, starts the page after this position (a
	// continuation token's) instead of at Page.
	After search.Cursor
}

// List returns a page, the total number of matches and the position after
// the page when more follow.
func (s *Service) List(ctx context.Context, p ListParams) (store.Page, error) {
	where, err := s.searchFor(ctx, p.Kind, p.ParentID, p.Search, true)
	if err != nil {
		return store.Page{}, err
	}
	// The store scopes the list to the caller's tenancy.
	q := store.ListQuery{Kind: p.Kind, ParentID: p.ParentID, Where: where, Order: p.Order, After: p.After, Limit: p.Size}
	if p.After == nil {
		q.Offset = (p.Page - 1) * p.Size
	}
	page, err := s.store.ListResources(ctx, q)
	if err != nil {
		return store.Page{}, problem.Internal(err)
	}
	items := make([]*resource.Resource, len(page.Items))
	for i := range page.Items {
		items[i] = &page.Items[i]
	}
	if err := s.markQueued(ctx, items...); err != nil {
		return store.Page{}, problem.Internal(err)
	}
	return page, nil
}

// searchFor checks that a list's parent exists (within the caller's
// scope) and translates its search; indexed lets the term index serve it,
// which only the resources table has.
func (s *Service) searchFor(ctx context.Context, kind, parentID, query string, indexed bool) (search.Where, error) {
	opts := search.Options{Table: "resources", OwnerReferences: true, Kind: true, Indexed: indexed}
	if kind != "" {
		k, err := s.kind(kind)
		if err != nil {
			return search.Where{}, err
		}
		if parentID != "" {
			if _, err := s.get(ctx, Ref{Kind: k.ParentKind, ID: parentID}); err != nil {
				return search.Where{}, err
			}
		}
		opts = search.Options{Table: "resources", OwnerReferences: k.ParentKind != "", Indexed: indexed, Disallowed: k.SearchDisallowed,
			RefTypes: refTypes(k)} // empty, not nil, when it declares none: a search for one is refused
	} else {
		opts.Disallowed = s.disallowedAnywhere
	}
	where, err := search.Translate(query, s.store.Dialect(), opts)
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return search.Where{}, problem.New(http.StatusBadRequest, problem.CodeInvalidSearch, se.Message).
				WithErrors(problem.FieldError{Field: "search", Value: problem.Truncate(query, 200), Message: se.Message})
		}
		return search.Where{}, problem.Internal(err)
	}
	return where, nil
}

// WatchFilter is searchFor for a watch: the search runs against the
// change log (store.ChangeQuery's Where), which has no term index.
func (s *Service) WatchFilter(ctx context.Context, kind, parentID, query string) (search.Where, error) {
	return s.searchFor(ctx, kind, parentID, query, false)
}

// Present makes stored resources what a GET returns (see markQueued).
func (s *Service) Present(ctx context.Context, rs ...*resource.Resource) error {
	if err := s.markQueued(ctx, rs...); err != nil {
		return problem.Internal(err)
	}
	return nil
}

// disallowedAnywhere refuses, in a search across kinds, a field some kind
// keeps from search: the rows of that kind would answer it too.
func (s *Service) disallowedAnywhere(field string) bool {
	for _, k := range s.kinds.All() {
		if k.SearchDisallowed(field) {
			return true
		}
	}
	return false
}
