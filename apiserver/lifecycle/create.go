// Creating a resource at generation 1 under its parent's row lock.

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Create validates and stores a new resource at generation 1.
func (s *Service) Create(ctx context.Context, kind, parentID string, req *CreateRequest, actor string) (*resource.Resource, error) {
	k, err := s.kind(kind)
	if err != nil {
		return nil, err
	}
	if errs := ValidateCreateFor(k, req); len(errs) > 0 {
		return nil, problem.Validation(errs...)
	}
	if err := s.validateSpec(kind, req.Spec); err != nil {
		return nil, err
	}
	now := s.clock()
	rules, err := s.rules.Evaluate(ctx, kind, 1, nil)
	if err != nil {
		return nil, asProblem(err)
	}
	r := &resource.Resource{
		Kind: kind, ID: newID(), Name: req.Name, Generation: 1,
		Spec: req.Spec, Labels: req.Labels,
		CreatedTime: now, UpdatedTime: now, CreatedBy: actor, UpdatedBy: actor,
		Status: resource.Status{Conditions: aggregation.Compute(aggregation.Input{Kind: kind, Generation: 1,
			Registered: s.registered[kind], Rules: rules, Now: now}).Conditions},
	}
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	if k.ParentKind == "" {
		parentID = ""
	}
	r.OwnerReferences = s.kinds.Owner(kind, parentID)
	r.Href = s.kinds.Href(kind, r.ID, parentID)
	// A resource belongs to its creator's tenancy; a child to its
	// parent's, which the caller must see.
	r.Tenancy = maps.Clone(tenancy.FromContext(ctx).Tenancy)
	err = s.inTx(ctx, func(tx store.Tx) error {
		if parentID != "" {
			parent, err := tx.LockResource(ctx, k.ParentKind, parentID)
			if errors.Is(err, store.ErrNotFound) {
				return problem.NotFound(k.ParentKind, parentID)
			}
			if err != nil {
				return err
			}
			r.Tenancy = maps.Clone(parent.Tenancy)
			if parent.DeletedTime != nil {
				return problem.Newf(http.StatusConflict, problem.CodeBeingDeleted,
					"%s %s is being deleted; %s cannot be added to it", strings.ToLower(k.ParentKind), parentID, pluralNoun(k))
			}
		}
		if r.References, err = s.resolveReferences(ctx, tx, k, req.References); err != nil {
			return err
		}
		if err := tx.CreateResource(ctx, r); err != nil {
			if errors.Is(err, store.ErrNameConflict) {
				scope := ""
				if parentID != "" {
					scope = " in " + strings.ToLower(k.ParentKind) + " " + parentID
				}
				return problem.Newf(http.StatusConflict, problem.CodeNameConflict,
					"a %s named %q already exists%s; a name becomes free once its resource is removed", kind, req.Name, scope).
					WithErrors(problem.FieldError{Field: "name", Value: req.Name, Constraint: "unique", Message: "name is already in use"})
			}
			return err
		}
		// A new id has no references to clear: without any to store, the
		// create skips the statement.
		if len(r.References) > 0 {
			if err := tx.SetReferences(ctx, r.ID, r.References); err != nil {
				return err
			}
		}
		return tx.AppendOutbox(ctx, outboxFor(r, store.OutboxCreated, now))
	})
	if err != nil {
		return nil, asProblem(err)
	}
	s.logFor(r).Info().Str("actor", actor).Msg("created")
	return r, nil
}

func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 only fails when the system's random source does.
		panic(fmt.Sprintf("lifecycle: generate UUIDv7: %v", err))
	}
	return id.String()
}
