// Package store persists clusters, node pools, adapter statuses and the
// reconcile outbox with gorm, on PostgreSQL (production) or SQLite (the
// embedded default). Both backends implement the same Store interface and
// pass the same test suite; the few dialect differences (row locks, JSON
// operators, error codes) are contained here and in package search.
//
// The store knows nothing about the contract's rules: package lifecycle runs
// them inside the transactions this package provides. It does keep tenancy:
// GetResource, ListResources and LockResource see only the resources of the
// caller the context carries (tenancy.WithCaller), filtered in SQL, so
// another tenant's resource is missing exactly as a random id is.
package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Errors callers can test for with errors.Is.
var (
	ErrNotFound     = errors.New("not found")
	ErrNameConflict = errors.New("name already in use")
)

// Store is the persistence interface of the API: every part below, so
// that each backend satisfies one interface. A component that needs only
// some of it takes those parts (relay.Store, lifecycle.Store).
type Store interface {
	Database
	Maintenance
	Resources
	Transactions
	Outbox
	Settings
	Admissions
	ChangeLog
}

// Database is the connection itself, for the process that opened it:
// which backend, whether it answers, its pool.
type Database interface {
	// Backend is "postgres" or "sqlite".
	Backend() string
	Ping(ctx context.Context) error
	// SQLDB exposes the pool for metrics.
	SQLDB() *sql.DB
	Close() error
}

// Maintenance is the work the API does on the database itself rather than
// for a request: before it serves, and in the background.
type Maintenance interface {
	// Migrate applies pending schema migrations.
	Migrate(ctx context.Context) error
	// Warm opens the pool's idle connections before the API serves, so
	// the first requests after a start do not each wait for one.
	Warm(ctx context.Context) error
	// CompactTermCounts folds the term-count changes writers appended
	// (PostgreSQL) into the kept counts, returning how many terms moved.
	// The API calls it every second; a no-op on SQLite.
	CompactTermCounts(ctx context.Context) (int64, error)
}

// Resources reads the stored resources and their adapter statuses outside
// a transaction: requests' reads, searches, and start-up passes.
type Resources interface {
	// Dialect tells the search translator which SQL to emit for a
	// ListQuery's Where.
	Dialect() search.Dialect
	// GetResource reads a resource of a kind, or of any kind when kind is
	// "": ErrNotFound for another tenant's, as for a random id (the
	// caller's scope, see the package comment).
	GetResource(ctx context.Context, kind, id string) (*resource.Resource, error)
	// ListResources reads a page of the resources a query matches, within
	// the caller's scope, with their total and the position after the
	// page's last row.
	ListResources(ctx context.Context, q ListQuery) (Page, error)
	ListStatuses(ctx context.Context, resourceID string, offset, limit int) ([]resource.AdapterStatus, int64, error)
	// LiveResources pages through every stored resource of a kind by id,
	// for start-up passes (re-aggregation, workflow hand-off).
	LiveResources(ctx context.Context, kind, afterID string, limit int) ([]resource.Resource, error)
	// LiveRefs is LiveResources reading only identity and generation: the
	// relay's start-up pass over a large fleet.
	LiveRefs(ctx context.Context, kind, afterID string, limit int) ([]LiveRef, error)
	// CountResources counts the stored resources of a kind (deleting ones
	// included: their workflows still run).
	CountResources(ctx context.Context, kind string) (int64, error)
}

// Transactions are the only way to change resources, so that a change, its
// statuses and its outbox row commit together or not at all.
type Transactions interface {
	// InTx runs fn in one transaction; fn's error rolls it back.
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Outbox is the relay's side of the outbox: reading the reconcile requests
// transactions wrote (OutboxWrites) and removing them once delivered.
type Outbox interface {
	// PendingOutbox returns the oldest undelivered reconcile requests.
	PendingOutbox(ctx context.Context, limit int) ([]OutboxEntry, error)
	// AckOutbox removes delivered entries.
	AckOutbox(ctx context.Context, ids ...int64) error
	// ClaimOutbox hands deliver the oldest undelivered entries that no
	// other relay holds, removes the ones deliver returns as delivered and
	// returns how many it handed. While deliver runs the entries are held
	// for this caller alone (PostgreSQL), so API replicas split a backlog.
	ClaimOutbox(ctx context.Context, limit int, deliver func(context.Context, []OutboxEntry) []int64) (int, error)
	// OutboxBacklog counts undelivered entries and returns when the oldest
	// was written (zero when there is none), for the relay-lag metrics.
	OutboxBacklog(ctx context.Context) (pending int64, oldest time.Time, err error)
}

// Settings are small values the API keeps between starts, shared by its
// replicas: what the workflows and the aggregation were last given.
type Settings interface {
	GetSetting(ctx context.Context, key string) (string, bool, error)
	PutSetting(ctx context.Context, key, value string) error
}

// LiveRef identifies a stored resource.
type LiveRef struct {
	ID         string
	ParentID   string
	Generation int64
	// Tenant is the resource's tenancy in canonical form ("" without).
	Tenant string
}

// ChildRef names a child resource as its outbox row needs it.
type ChildRef struct {
	Kind string
	LiveRef
}

// Tx is what a transaction may do: every part below. Every method that
// changes a resource expects the caller to hold its row lock
// (LockResource) first; locks are taken parent before child so concurrent
// requests cannot deadlock.
type Tx interface {
	ResourceWrites
	Hierarchy
	Reports
	References
	OutboxWrites
	// OnCommit runs fn once the transaction has committed, before InTx
	// returns and before it waits for the change log's numbering
	// (PostgreSQL): for a cue that needs the commit and nothing after it,
	// such as the relay's. A transaction that rolls back never runs it.
	OnCommit(fn func())
}

// ResourceWrites take resources' row locks and change the resources under
// them.
type ResourceWrites interface {
	// LockResource reads a resource and locks its row until the end of the
	// transaction (SELECT ... FOR UPDATE on PostgreSQL; SQLite transactions
	// are IMMEDIATE and so already exclusive). Another tenant's row is
	// ErrNotFound and stays unlocked, as a random id (the caller's scope).
	LockResource(ctx context.Context, kind, id string) (*resource.Resource, error)
	// CreateResource inserts a resource; ErrNameConflict when the name is
	// taken among its siblings.
	CreateResource(ctx context.Context, r *resource.Resource) error
	// UpdateResource writes every mutable field of a resource.
	UpdateResource(ctx context.Context, r *resource.Resource) error
	// UpdateState writes what aggregation and deletion change (generation,
	// conditions, the updated and deleted stamps) and leaves spec, labels
	// and references alone: naming those in the UPDATE would run SQLite's
	// search-index triggers, whose mere invocation cost status reports
	// 40% of their rate even though they change nothing.
	UpdateState(ctx context.Context, r *resource.Resource) error
	// RemoveResource deletes a resource with its children and all their
	// statuses.
	RemoveResource(ctx context.Context, id string) error
	// AssignTenancy writes the tenancy, updated_time and updated_by of
	// resources stored without a tenancy (before the tenancy file was in
	// place): the adoption of a resource with its subtree, all locked
	// by the caller. It keeps what follows a tenancy in step: the tenant's
	// search term (and so its kept count), the resources' outbox rows and
	// the change log. ErrNameConflict when a name is taken in the new
	// tenancy; ErrNotFound when one of them is gone or has a tenancy.
	AssignTenancy(ctx context.Context, rs ...*resource.Resource) error
}

// Hierarchy reads a resource's direct children: a deletion cascades to
// them and waits for them, and a parent's recovery wakes them.
type Hierarchy interface {
	// Children lists (and locks) the direct children of a resource.
	Children(ctx context.Context, parentID string) ([]resource.Resource, error)
	CountChildren(ctx context.Context, parentID string) (int, error)
	// WaitingChildren lists the direct children of a resource that are
	// neither being deleted nor Reconciled, without locking them: enough
	// to tell their workflows.
	WaitingChildren(ctx context.Context, parentID string) ([]ChildRef, error)
}

// Reports are the adapter statuses of a resource: read to aggregate its
// conditions, written by a status report, which also starts its round.
type Reports interface {
	Statuses(ctx context.Context, resourceID string) ([]resource.AdapterStatus, error)
	PutStatus(ctx context.Context, resourceID string, st resource.AdapterStatus) error
	// StartRound marks the round admitted for a resource (Admissions) at
	// generation or before as started: one of its adapters reported at
	// generation.
	StartRound(ctx context.Context, resourceID string, generation int64, at time.Time) error
}

// References is the index of typed links by target, so that a resource
// still referenced cannot be deleted.
type References interface {
	// SetReferences replaces the links of a resource (stored with it by
	// CreateResource and UpdateResource) in the index Referrers reads.
	SetReferences(ctx context.Context, resourceID string, links []resource.Link) error
	// Referrers lists the resources, being deleted or not, that are not
	// among excludeIDs and link to any of targetIDs: at most limit of them,
	// with their total.
	Referrers(ctx context.Context, targetIDs, excludeIDs []string, limit int) ([]resource.Resource, int64, error)
}

// OutboxWrites write a reconcile request in the transaction of the change
// that needs it, so a crash between commit and hand-off cannot lose it.
type OutboxWrites interface {
	AppendOutbox(ctx context.Context, e OutboxEntry) error
}

// ListQuery selects a page of resources.
type ListQuery struct {
	Kind     string // "" lists every kind
	ParentID string // only children of this resource, when set
	Where    search.Where
	Order    []search.OrderTerm // the default order when empty; id breaks ties
	// After starts the page after this position in the full order
	// (search.WithTieBreak(Order)); Offset is then 0.
	After  search.Cursor
	Offset int
	Limit  int
	// Tenant, when set, lists only the resources of this tenancy (its
	// canonical form). A tenant caller's scope sets it (and a query for
	// another tenancy than the caller's matches nothing); "" with no
	// tenant caller lists every tenancy's.
	Tenant string
}

// Page is one page of a list.
type Page struct {
	Items []resource.Resource
	// Total counts every match, not only this page. Lists of a kind with
	// no search read it from a count kept with the rows (schema version
	// 5); the others count the matches.
	Total int64
	// Next is the position after the last item when more rows follow it
	// (nil on the last page), in the full order of the query.
	Next search.Cursor
}

// Outbox reasons: why a reconcile was requested.
const (
	OutboxCreated  = "created"
	OutboxUpdated  = "updated"
	OutboxDeleting = "deleting"
	OutboxRemoved  = "removed"
	// OutboxParentReconciled: the resource's parent became Reconciled (a
	// new generation of it took effect, or it recovered) while the resource
	// was waiting: its adapters not done may have been waiting for the
	// parent, so they run at once instead of at the end of the backoff.
	OutboxParentReconciled = "parent-reconciled"
)

// OutboxEntry asks for a reconcile of one resource at one generation. It is
// written in the same transaction as the change, so a crash between commit
// and hand-off cannot lose it.
type OutboxEntry struct {
	ID          int64
	Kind        string
	ResourceID  string
	ParentID    string
	Generation  int64
	Reason      string
	CreatedTime time.Time
	// TraceParent is the W3C traceparent of the request that wrote the row
	// ("" when it was not traced): the relay's hand-off continues that
	// trace.
	TraceParent string
	// Tenant is the resource's tenancy in canonical form ("" without): the
	// relay starts its workflow with it as a search attribute.
	Tenant string
}
