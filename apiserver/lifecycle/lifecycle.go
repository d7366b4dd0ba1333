// Package lifecycle implements what the API does to clusters and node pools:
// create, patch, delete (soft, with cascade and Finalized-driven removal),
// force-delete, and adapter status reports with aggregation. Each operation
// is one store transaction that locks the rows it changes (parent before
// child), applies the contract's rules from packages statusreport and
// aggregation, and writes an outbox row for every generation bump.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/apiserver/conditionrules"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/statusreport"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
	"github.com/hyperfleet/hyperfleet/resource"
)

// SpecValidator checks a spec against the configured schema of its kind.
type SpecValidator interface {
	ValidateSpec(kind string, spec json.RawMessage) []problem.FieldError
}

// Config wires a Service.
type Config struct {
	Store store.Store
	// Registered maps a kind to the adapters whose reports decide readiness.
	Registered map[string][]string
	// Optional maps a kind to adapters that report without deciding
	// anything: their reports are stored and listed like any other.
	Optional map[string][]string
	// SpecValidator is optional.
	SpecValidator SpecValidator
	// Kinds are the resource kinds served; the default kinds when nil.
	Kinds *resource.Kinds
	// Rules are the kinds' compiled condition rules; none when nil.
	Rules  *conditionrules.Set
	Logger zerolog.Logger
	// Now is injectable for tests; time.Now by default.
	Now func() time.Time
}

// Service runs the resource lifecycle.
type Service struct {
	store      store.Store
	registered map[string][]string
	optional   map[string][]string
	specs      SpecValidator
	kinds      *resource.Kinds
	rules      *conditionrules.Set
	log        zerolog.Logger
	now        func() time.Time
	onOutbox   atomic.Pointer[func()]
}

// New builds a Service.
func New(cfg Config) *Service {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	kinds := cfg.Kinds
	if kinds == nil {
		kinds = resource.Defaults()
	}
	return &Service{store: cfg.Store, registered: cfg.Registered, optional: cfg.Optional, specs: cfg.SpecValidator, kinds: kinds, rules: cfg.Rules, log: cfg.Logger, now: now}
}

// Kinds returns the kinds table the service runs.
func (s *Service) Kinds() *resource.Kinds { return s.kinds }

// kind returns a kind's declaration; every kind a route names is declared.
func (s *Service) kind(name string) (resource.Kind, error) {
	k, ok := s.kinds.Get(name)
	if !ok {
		return k, problem.Internal(fmt.Errorf("kind %s is not in the kinds table", name))
	}
	return k, nil
}

// inTx runs fn in a transaction and, once it has committed, tells the
// relay when fn wrote to the outbox.
func (s *Service) inTx(ctx context.Context, fn func(tx store.Tx) error) error {
	var wrote bool
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		return fn(&outboxWatch{Tx: tx, wrote: &wrote})
	})
	if fn := s.onOutbox.Load(); err == nil && wrote && fn != nil {
		(*fn)()
	}
	return err
}

// OnOutbox sets what is called after a transaction that wrote outbox rows
// has committed: the relay's cue to hand them to Temporal at once.
func (s *Service) OnOutbox(fn func()) { s.onOutbox.Store(&fn) }

// outboxWatch notes whether a transaction appended to the outbox, and
// links each row to the request's trace: the row keeps the traceparent of
// the request's span, so the relay's hand-off to Temporal continues it.
type outboxWatch struct {
	store.Tx
	wrote *bool
}

func (w *outboxWatch) AppendOutbox(ctx context.Context, e store.OutboxEntry) error {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		attrs := append(tracing.Resource(e.Kind, e.ResourceID, e.Generation), attribute.String("hyperfleet.outbox.reason", e.Reason))
		if !*w.wrote {
			// The first row is the resource the request changed; cascaded
			// rows (children of a deleted parent) are events only.
			span.SetAttributes(attrs...)
		}
		span.AddEvent("outbox.append", trace.WithAttributes(attrs...))
	}
	if e.TraceParent == "" {
		e.TraceParent = tracing.TraceParent(ctx)
	}
	*w.wrote = true
	return w.Tx.AppendOutbox(ctx, e)
}

// Registered returns the adapters registered for a kind.
func (s *Service) Registered(kind string) []string { return s.registered[kind] }

// Optional returns the optional adapters of a kind.
func (s *Service) Optional(kind string) []string { return s.optional[kind] }

// isDeclared reports whether the operator named the adapter for the kind,
// as required or optional: such an adapter is always let in.
func (s *Service) isDeclared(kind, adapter string) bool {
	return s.isRegistered(kind, adapter) || slices.Contains(s.optional[kind], adapter)
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Ref addresses a resource by its path: a child addressed under its parent
// (a node pool under its cluster) also names the parent.
type Ref = resource.Ref

func notFound(ref Ref) *problem.Problem { return problem.NotFound(ref.Kind, ref.ID) }

// visible reports whether the request's caller may see a resource: every
// caller when tenancy is off and system callers always; a tenant only the
// resources of its own tenancy. Another tenant's resource is answered as
// missing, never as forbidden, so its existence does not leak.
func visible(ctx context.Context, r *resource.Resource) bool {
	c := tenancy.FromContext(ctx)
	return c.Key == "" || c.Key == resource.TenancyKey(r.Tenancy)
}

// GetAny returns a resource of any kind by id (GET /resources/{id}).
func (s *Service) GetAny(ctx context.Context, id string) (*resource.Resource, error) {
	r, err := s.store.GetResource(ctx, "", id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !visible(ctx, r) {
		return nil, problem.NotFound("Resource", id)
	}
	if err != nil {
		return nil, problem.Internal(err)
	}
	return r, nil
}

// Get returns a resource; a node pool must belong to the cluster in its path.
func (s *Service) Get(ctx context.Context, ref Ref) (*resource.Resource, error) {
	r, err := s.store.GetResource(ctx, ref.Kind, ref.ID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!belongs(r, ref) || !visible(ctx, r)) {
		return nil, notFound(ref)
	}
	if err != nil {
		return nil, problem.Internal(err)
	}
	return r, nil
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
	opts := search.Options{Table: "resources", OwnerReferences: true, Kind: true, Indexed: true}
	if p.Kind != "" {
		k, err := s.kind(p.Kind)
		if err != nil {
			return store.Page{}, err
		}
		if p.ParentID != "" {
			if _, err := s.Get(ctx, Ref{Kind: k.ParentKind, ID: p.ParentID}); err != nil {
				return store.Page{}, err
			}
		}
		opts = search.Options{Table: "resources", OwnerReferences: k.ParentKind != "", Indexed: true, Disallowed: k.SearchDisallowed}
	} else {
		opts.Disallowed = s.disallowedAnywhere
	}
	where, err := search.Translate(p.Search, s.store.Dialect(), opts)
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return store.Page{}, problem.New(http.StatusBadRequest, problem.CodeInvalidSearch, se.Message).
				WithErrors(problem.FieldError{Field: "search", Value: problem.Truncate(p.Search, 200), Message: se.Message})
		}
		return store.Page{}, problem.Internal(err)
	}
	q := store.ListQuery{Kind: p.Kind, ParentID: p.ParentID, Where: where, Order: p.Order, After: p.After, Limit: p.Size,
		Tenant: tenancy.FromContext(ctx).Key}
	if p.After == nil {
		q.Offset = (p.Page - 1) * p.Size
	}
	page, err := s.store.ListResources(ctx, q)
	if err != nil {
		return store.Page{}, problem.Internal(err)
	}
	return page, nil
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
			if errors.Is(err, store.ErrNotFound) || err == nil && !visible(ctx, parent) {
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
		if err := tx.SetReferences(ctx, r.ID, r.References); err != nil {
			return err
		}
		return tx.AppendOutbox(ctx, outboxFor(r, store.OutboxCreated, now))
	})
	if err != nil {
		return nil, asProblem(err)
	}
	s.logFor(r).Info().Str("actor", actor).Msg("created")
	return r, nil
}

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

// Delete soft-deletes a resource (and a cluster's node pools), bumping the
// generation so adapters clean up. A second call changes nothing. When no
// adapter has anything to finalize the resource is removed at once.
func (s *Service) Delete(ctx context.Context, ref Ref, actor string) (*resource.Resource, error) {
	var out *resource.Resource
	err := s.inTx(ctx, func(tx store.Tx) error {
		parent, err := s.lockParent(ctx, tx, ref)
		if err != nil {
			return err
		}
		r, err := s.lock(ctx, tx, ref)
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
func (s *Service) resolveReferences(ctx context.Context, tx store.Tx, k resource.Kind, refs []ReferenceRequest) ([]resource.Link, error) {
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
		if errors.Is(err, store.ErrNotFound) || err == nil && !visible(ctx, t) {
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
	removable, err := s.aggregate(ctx, tx, r, statuses, now)
	if err != nil {
		return err
	}
	if removable {
		return s.remove(ctx, tx, r, now, "all adapters finalized")
	}
	return tx.UpdateState(ctx, r)
}

// settleParent re-evaluates a deleting parent after one of its children
// changed: the last child's removal may complete the parent's deletion.
func (s *Service) settleParent(ctx context.Context, tx store.Tx, parent *resource.Resource, now time.Time) error {
	if parent.DeletedTime == nil {
		return nil
	}
	return s.settle(ctx, tx, parent, now)
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
func (s *Service) descendants(ctx context.Context, tx store.Tx, r *resource.Resource) ([]resource.Resource, error) {
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
		parent, err := s.lockParent(ctx, tx, ref)
		if err != nil {
			return err
		}
		r, err := s.lock(ctx, tx, ref)
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

// ReportResult tells the handler how to answer a status report.
type ReportResult struct {
	// Status is the stored report; nil when the report was discarded (204).
	Status *resource.AdapterStatus
	// Discarded says why a report was dropped.
	Discarded string
}

// MaxAdaptersPerResource bounds the adapters with a stored status on one
// resource: any caller may report under any adapter name, and every status
// is kept and listed. Registered adapters are always accepted.
const MaxAdaptersPerResource = 64

// ReportStatus applies an adapter's report under the resource's row lock.
func (s *Service) ReportStatus(ctx context.Context, ref Ref, report *resource.StatusReport) (ReportResult, error) {
	now := s.clock()
	if errs := statusreport.Validate(report, now); len(errs) > 0 {
		return ReportResult{}, problem.Validation(errs...)
	}
	var res ReportResult
	var generation int64
	err := s.inTx(ctx, func(tx store.Tx) error {
		parent, err := s.lockParent(ctx, tx, ref)
		if err != nil {
			return err
		}
		r, err := s.lock(ctx, tx, ref)
		if err != nil {
			return err
		}
		generation = r.Generation
		statuses, err := tx.Statuses(ctx, r.ID)
		if err != nil {
			return err
		}
		var existing *resource.AdapterStatus
		for i := range statuses {
			if statuses[i].Adapter == report.Adapter {
				existing = &statuses[i]
			}
		}
		if existing == nil && len(statuses) >= MaxAdaptersPerResource && !s.isDeclared(r.Kind, report.Adapter) {
			return problem.Validation(problem.FieldError{Field: "adapter", Value: report.Adapter,
				Constraint: fmt.Sprintf("maxAdapters=%d", MaxAdaptersPerResource),
				Message:    fmt.Sprintf("%s %s already holds statuses of %d adapters, the limit; only registered and optional adapters may add more", r.Kind, r.ID, len(statuses))})
		}
		outcome, why := statusreport.Decide(report, r.Generation, existing)
		if outcome == statusreport.Discard {
			res.Discarded = why
			return nil
		}
		st := statusreport.Merge(report, existing, now)
		if err := tx.PutStatus(ctx, r.ID, st); err != nil {
			return err
		}
		res.Status = &st
		if outcome == statusreport.StoreOnly || !s.isRegistered(r.Kind, report.Adapter) {
			return nil
		}
		if existing == nil {
			// A first report: where it sorts among the others is the
			// database collation's call, so read them back.
			err = s.settle(ctx, tx, r, now)
		} else {
			// The statuses read under the lock, with this report in place
			// of the adapter's previous one, are what a second read would
			// return: one round trip fewer on the API's busiest write.
			*existing = st
			err = s.settleWith(ctx, tx, r, statuses, now)
		}
		if err != nil {
			return err
		}
		if parent != nil {
			return s.settleParent(ctx, tx, parent, now)
		}
		return nil
	})
	if err != nil {
		return ReportResult{}, asProblem(err)
	}
	ev := s.log.Debug().Str("kind", ref.Kind).Str("resource_id", ref.ID).Int64("generation", generation).
		Str("adapter", report.Adapter).Int64("observed_generation", report.ObservedGeneration)
	if res.Discarded != "" {
		ev.Str("discarded", res.Discarded).Msg("status report discarded")
	} else {
		ev.Msg("status report stored")
	}
	return res, nil
}

// ListStatuses pages through the stored reports of a resource.
func (s *Service) ListStatuses(ctx context.Context, ref Ref, page, size int) ([]resource.AdapterStatus, int64, error) {
	if _, err := s.Get(ctx, ref); err != nil {
		return nil, 0, err
	}
	items, total, err := s.store.ListStatuses(ctx, ref.ID, (page-1)*size, size)
	if err != nil {
		return nil, 0, problem.Internal(err)
	}
	return items, total, nil
}

func (s *Service) isRegistered(kind, adapter string) bool {
	for _, a := range s.registered[kind] {
		if a == adapter {
			return true
		}
	}
	return false
}

// registeredStatuses keeps the reports of the kind's registered adapters.
func (s *Service) registeredStatuses(kind string, statuses []resource.AdapterStatus) []resource.AdapterStatus {
	out := make([]resource.AdapterStatus, 0, len(statuses))
	for i := range statuses {
		if s.isRegistered(kind, statuses[i].Adapter) {
			out = append(out, statuses[i])
		}
	}
	return out
}

// aggregate recomputes a locked resource's conditions from its statuses in
// place and reports whether its deletion is complete.
func (s *Service) aggregate(ctx context.Context, tx store.Tx, r *resource.Resource, statuses []resource.AdapterStatus, now time.Time) (bool, error) {
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

// lock takes the row lock of the addressed resource.
func (s *Service) lock(ctx context.Context, tx store.Tx, ref Ref) (*resource.Resource, error) {
	r, err := tx.LockResource(ctx, ref.Kind, ref.ID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!belongs(r, ref) || !visible(ctx, r)) {
		return nil, notFound(ref)
	}
	return r, err
}

// lockParent locks a child's parent first, keeping the parent-before-child
// lock order every transaction follows.
func (s *Service) lockParent(ctx context.Context, tx store.Tx, ref Ref) (*resource.Resource, error) {
	if ref.ParentID == "" {
		return nil, nil
	}
	k, err := s.kind(ref.Kind)
	if err != nil {
		return nil, err
	}
	p, err := tx.LockResource(ctx, k.ParentKind, ref.ParentID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !visible(ctx, p) {
		return nil, problem.NotFound(k.ParentKind, ref.ParentID)
	}
	return p, err
}

// pluralNoun names a child kind in messages: "node pools" for NodePool
// under Cluster, as the contract's messages always have, else the plural.
func pluralNoun(k resource.Kind) string {
	if k.Kind == resource.KindNodePool {
		return "node pools"
	}
	return k.Plural
}

func (s *Service) validateSpec(kind string, spec json.RawMessage) error {
	if s.specs == nil {
		return nil
	}
	if errs := s.specs.ValidateSpec(kind, spec); len(errs) > 0 {
		return problem.New(http.StatusBadRequest, problem.CodeSpecSchema,
			fmt.Sprintf("spec does not match the %sSpec schema: %s", kind, errs[0].Message)).WithErrors(errs...)
	}
	return nil
}

func (s *Service) logFor(r *resource.Resource) *zerolog.Logger {
	l := s.log.With().Str("kind", r.Kind).Str("resource_id", r.ID).Int64("generation", r.Generation).Logger()
	return &l
}

func outboxFor(r *resource.Resource, reason string, now time.Time) store.OutboxEntry {
	e := store.OutboxEntry{Kind: r.Kind, ResourceID: r.ID, Generation: r.Generation, Reason: reason, CreatedTime: now,
		Tenant: resource.TenancyKey(r.Tenancy)}
	if r.OwnerReferences != nil {
		e.ParentID = r.OwnerReferences.ID
	}
	return e
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

func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 only fails when the system's random source does.
		panic(fmt.Sprintf("lifecycle: generate UUIDv7: %v", err))
	}
	return id.String()
}

func asProblem(err error) error {
	var p *problem.Problem
	if errors.As(err, &p) {
		return p
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return problem.New(http.StatusServiceUnavailable, problem.CodeRequestTimeout, "the request was cancelled or timed out").WithCause(err)
	}
	return problem.Internal(err)
}
