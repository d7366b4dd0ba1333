// Package lifecycle implements what the API does to clusters and node pools:
// create, patch, delete (soft, with cascade and Finalized-driven removal),
// force-delete, and adapter status reports with aggregation. Each operation
// is one store transaction that locks the rows it changes (parent before
// child), applies the contract's rules from packages statusreport and
// aggregation, and writes an outbox row for every generation bump.
//
// This file holds the Service and what every operation shares: the
// transaction that cues the relay, the row locks in parent-before-child
// order, outbox entries and error mapping. Tenancy is the store's: its
// reads and locks see only what the request's caller may (another
// tenant's resource is missing, never forbidden, so its existence does not
// leak), so no operation here checks it.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hyperfleet/hyperfleet/apiserver/conditionrules"
	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
	"github.com/hyperfleet/hyperfleet/resource"
)

// SpecValidator checks a spec against the configured schema of its kind.
type SpecValidator interface {
	ValidateSpec(kind string, spec json.RawMessage) []problem.FieldError
}

// Store is what the lifecycle reads and writes: resources, in
// transactions; the settings of its start-up pass; and whether a change
// still waits for admission. The outbox it only appends to, in those
// transactions.
type Store interface {
	store.Resources
	store.Transactions
	store.Settings
	store.Admissions
}

// Config wires a Service.
type Config struct {
	Store Store
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
	store      Store
	registered map[string][]string
	optional   map[string][]string
	specs      SpecValidator
	kinds      *resource.Kinds
	rules      *conditionrules.Set
	log        zerolog.Logger
	now        func() time.Time
	onOutbox   atomic.Pointer[func()]
	// showAdmission says reads mark resources whose change waits in the
	// outbox (ShowAdmission).
	showAdmission atomic.Bool
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
// relay when fn wrote to the outbox: at the commit, not after the change
// log's numbering, which only watches wait for (five round trips on
// PostgreSQL that every hand-off would otherwise wait out).
func (s *Service) inTx(ctx context.Context, fn func(tx store.Tx) error) error {
	return s.store.InTx(ctx, func(tx store.Tx) error {
		return fn(&outboxWatch{Tx: tx, cue: s.onOutbox.Load()})
	})
}

// ShowAdmission makes reads say, in the Ready and Reconciled conditions
// of a resource not Reconciled, when its change still waits in the outbox
// for admission control (reason AwaitingAdmission). Only a process that
// hands the outbox over (runs a relay) turns it on: without one every
// change would wait for ever.
func (s *Service) ShowAdmission() { s.showAdmission.Store(true) }

// OnOutbox sets what is called after a transaction that wrote outbox rows
// has committed: the relay's cue to hand them to Temporal at once.
func (s *Service) OnOutbox(fn func()) { s.onOutbox.Store(&fn) }

// outboxWatch notes whether a transaction appended to the outbox, and
// links each row to the request's trace: the row keeps the traceparent of
// the request's span, so the relay's hand-off to Temporal continues it.
type outboxWatch struct {
	store.Tx
	wrote bool
	// cue is the relay's (OnOutbox), run at the commit; nil: none.
	cue *func()
}

func (w *outboxWatch) AppendOutbox(ctx context.Context, e store.OutboxEntry) error {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		attrs := append(tracing.Resource(e.Kind, e.ResourceID, e.Generation), attribute.String("hyperfleet.outbox.reason", e.Reason))
		if !w.wrote {
			// The first row is the resource the request changed; cascaded
			// rows (children of a deleted parent) are events only.
			span.SetAttributes(attrs...)
		}
		span.AddEvent("outbox.append", trace.WithAttributes(attrs...))
	}
	if e.TraceParent == "" {
		e.TraceParent = tracing.TraceParent(ctx)
	}
	if !w.wrote && w.cue != nil {
		w.Tx.OnCommit(*w.cue)
	}
	w.wrote = true
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

// lock takes the row lock of the addressed resource.
func (s *Service) lock(ctx context.Context, tx store.ResourceWrites, ref Ref) (*resource.Resource, error) {
	r, err := tx.LockResource(ctx, ref.Kind, ref.ID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !belongs(r, ref) {
		return nil, notFound(ref)
	}
	return r, err
}

// lockParent locks a child's parent first, keeping the parent-before-child
// lock order every transaction follows.
func (s *Service) lockParent(ctx context.Context, tx store.ResourceWrites, ref Ref) (*resource.Resource, error) {
	if ref.ParentID == "" {
		return nil, nil
	}
	k, err := s.kind(ref.Kind)
	if err != nil {
		return nil, err
	}
	p, err := tx.LockResource(ctx, k.ParentKind, ref.ParentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.NotFound(k.ParentKind, ref.ParentID)
	}
	return p, err
}

// lockWithParent locks the addressed resource after its parent (nil when
// it has none), the order lockParent keeps.
func (s *Service) lockWithParent(ctx context.Context, tx store.ResourceWrites, ref Ref) (parent, r *resource.Resource, err error) {
	if parent, err = s.lockParent(ctx, tx, ref); err != nil {
		return nil, nil, err
	}
	if r, err = s.lock(ctx, tx, ref); err != nil {
		return nil, nil, err
	}
	return parent, r, nil
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
