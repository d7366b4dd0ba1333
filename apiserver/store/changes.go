// The change log: every change of a resource, written in its transaction,
// read by sequence by the API's watches (package watch).

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Change types: what happened to the resource.
const (
	ChangeAdded    = "ADDED"
	ChangeModified = "MODIFIED"
	ChangeDeleted  = "DELETED"
)

// Change is one entry of the change log: the resource as it stood after
// the change (before its removal, for ChangeDeleted).
type Change struct {
	// Seq is the change's resource version: it only grows, and a change
	// becomes visible only after every change of a lower Seq.
	Seq      int64
	Type     string
	Time     time.Time
	Resource resource.Resource
	// Tenant is the resource's tenancy in canonical form ("" without).
	Tenant string
}

// ChangeQuery selects changes of the log in Seq order.
type ChangeQuery struct {
	After int64 // changes with a higher Seq only
	UpTo  int64 // and, when set, none higher than this
	Kind  string
	// ParentID, when set, keeps the children of that resource only.
	ParentID string
	// Where is a search translated for the table "resources" without
	// Indexed: the log's columns are named as the resources table's.
	Where search.Where
	Limit int
}

// ChangeWindow is the part of the log still kept: Oldest and Newest are
// the lowest and highest Seq stored (both 0 when nothing ever changed).
// Pruning always keeps the newest change, so Newest is also the last
// version given out.
type ChangeWindow struct {
	Oldest, Newest int64
}

// Resumable says whether every change after version is still kept, so a
// watch may resume there.
func (w ChangeWindow) Resumable(version int64) bool {
	return version >= 0 && version <= w.Newest && version >= w.Oldest-1
}

// ChangeLog is what watches read.
type ChangeLog interface {
	// ReadChanges reads the changes a query selects, within the caller's
	// scope (another tenant's are never returned).
	ReadChanges(ctx context.Context, q ChangeQuery) ([]Change, error)
	// MatchChanges returns which of the changes seqs name satisfy where,
	// within the caller's scope.
	MatchChanges(ctx context.Context, seqs []int64, where search.Where) (map[int64]bool, error)
	ChangeWindow(ctx context.Context) (ChangeWindow, error)
	// PruneChanges removes the changes older than before and those beyond
	// the newest keep, never the newest one, and returns how many went.
	PruneChanges(ctx context.Context, before time.Time, keep int64) (int64, error)
	// ChangeSignal receives a value once a change committed through this
	// store can be read (on PostgreSQL: once it is numbered) and, while
	// ListenChanges runs, another replica's. It holds one value: a
	// wake-up, not a count.
	ChangeSignal() <-chan struct{}
	// ListenChanges relays other replicas' commits to ChangeSignal until
	// ctx ends (PostgreSQL LISTEN, reconnecting after a failure). On
	// SQLite, whose only writer is this process, it just waits for ctx.
	ListenChanges(ctx context.Context) error
}

// changeChannel is the PostgreSQL notification channel of the log.
const changeChannel = "hyperfleet_changes"

// changeLockID serialises the numbering of changes on PostgreSQL
// (arbitrary: "hfchange" in ASCII): the sequencer's passes take it, one
// at a time, so numbers become visible in order: a reader that sees seq
// n has seen every seq below. Writers do not take it.
const changeLockID = 0x68666368616e6765

const changeColumns = "type, changed_ms, id, kind, parent_id, name, generation, spec, labels, conditions, refs, " +
	"created_time, updated_time, deleted_time, created_by, updated_by, deleted_by, tenant"

// changePlaceholders are one row's values of changeColumns.
var changePlaceholders = "(" + strings.TrimSuffix(strings.Repeat("?, ", strings.Count(changeColumns, ",")+1), ", ") + ")"

// pendingChange is a change noted in a transaction, written at its end.
type pendingChange struct {
	typ string
	row resourceRow
	// gone: created and removed in the same transaction; never visible.
	gone bool
}

// lockedState is what a transaction read of a resource under its lock:
// an UpdateState that leaves it so is no change.
type lockedState struct {
	generation int64
	deleted    *time.Time
	conditions []resource.Condition
}

func stateOf(r *resource.Resource) lockedState {
	return lockedState{generation: r.Generation, deleted: r.DeletedTime, conditions: slices.Clone(r.Status.Conditions)}
}

// sameState says whether two states differ only in the conditions'
// last_updated_time, which every adapter report moves: a report that
// changes nothing else is not a change a watcher is told about.
func sameState(a, b lockedState) bool {
	if a.generation != b.generation || (a.deleted == nil) != (b.deleted == nil) ||
		a.deleted != nil && !a.deleted.Equal(*b.deleted) || len(a.conditions) != len(b.conditions) {
		return false
	}
	for i := range a.conditions {
		x, y := a.conditions[i], b.conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.CreatedTime.Equal(y.CreatedTime) ||
			!x.LastTransitionTime.Equal(y.LastTransitionTime) {
			return false
		}
	}
	return true
}

// noteLocked remembers the state of resources read under their lock.
func (t *gormTx) noteLocked(rs ...*resource.Resource) {
	if !t.changeLog {
		return
	}
	if t.locked == nil {
		t.locked = map[string]lockedState{}
	}
	for _, r := range rs {
		t.locked[r.ID] = stateOf(r)
	}
}

// unchanged says whether r is as it was locked.
func (t *gormTx) unchanged(r *resource.Resource) bool {
	was, ok := t.locked[r.ID]
	return ok && sameState(was, stateOf(r))
}

// noteChange records a change of the transaction; several changes of one
// resource fold into one (created then changed is created; anything then
// removed is removed; created then removed is nothing).
func (t *gormTx) noteChange(typ string, row resourceRow) {
	if !t.changeLog {
		return
	}
	if t.changeAt == nil {
		t.changeAt = map[string]int{}
	}
	i, ok := t.changeAt[row.ID]
	if !ok {
		t.changeAt[row.ID] = len(t.changes)
		t.changes = append(t.changes, pendingChange{typ: typ, row: row})
		return
	}
	c := &t.changes[i]
	switch {
	case typ == ChangeDeleted && c.typ == ChangeAdded:
		c.gone = true
	case typ == ChangeDeleted:
		c.typ = ChangeDeleted
	}
	c.row = row
}

// flushChanges writes the transaction's changes at its end. SQLite
// numbers them as they are written (its writers are serial); on
// PostgreSQL they wait for the sequencer, which numbers them after the
// commit and notifies the other replicas.
func (t *gormTx) flushChanges(ctx context.Context) error {
	var live []pendingChange
	for _, c := range t.changes {
		if !c.gone {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	db := t.db.WithContext(ctx)
	now := time.Now().UnixMilli()
	values := make([]string, 0, len(live))
	args := make([]any, 0, len(live)*18)
	for _, c := range live {
		r := c.row
		values = append(values, changePlaceholders)
		args = append(args, c.typ, now, r.ID, r.Kind, r.ParentID, r.Name, r.Generation, r.Spec, r.Labels, r.Conditions, r.Refs,
			r.CreatedTime, r.UpdatedTime, r.DeletedTime, r.CreatedBy, r.UpdatedBy, r.DeletedBy, r.Tenant)
	}
	insert := "INSERT INTO resource_changes (" + changeColumns + ") VALUES " + strings.Join(values, ", ")
	if err := db.Exec(insert, args...).Error; err != nil {
		return fmt.Errorf("write %d change(s) to the change log: %w", len(live), err)
	}
	t.wroteChanges = true
	return nil
}

// removedRows reads a resource and its subtree before RemoveResource
// deletes them: their changes carry what they were.
func (t *gormTx) removedRows(ctx context.Context, id string) ([]resourceRow, error) {
	if !t.changeLog {
		return nil, nil
	}
	rows, err := t.db.WithContext(ctx).Raw(`WITH RECURSIVE subtree(id) AS (
			SELECT id FROM resources WHERE id = ?
			UNION ALL SELECT resources.id FROM resources JOIN subtree ON resources.parent_id = subtree.id)
		SELECT `+resourceColumns+` FROM resources WHERE id IN (SELECT id FROM subtree)`, id).Rows()
	if err != nil {
		return nil, fmt.Errorf("read %s before its removal: %w", id, err)
	}
	defer rows.Close()
	var out []resourceRow
	for rows.Next() {
		var row resourceRow
		if err := scanResource(rows, &row); err != nil {
			return nil, fmt.Errorf("read %s before its removal: %w", id, err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s before its removal: %w", id, err)
	}
	// The resource first, then its subtree.
	slices.SortFunc(out, func(a, b resourceRow) int {
		switch {
		case a.ID == id:
			return -1
		case b.ID == id:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s *gormStore) signalChange() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *gormStore) ChangeSignal() <-chan struct{} { return s.changed }

func (s *gormStore) ReadChanges(ctx context.Context, q ChangeQuery) ([]Change, error) {
	conds := []string{"resources.seq > ?"}
	args := []any{q.After}
	if q.UpTo > 0 {
		conds = append(conds, "resources.seq <= ?")
		args = append(args, q.UpTo)
	}
	if q.Kind != "" {
		conds = append(conds, "resources.kind = ?")
		args = append(args, q.Kind)
	}
	if q.ParentID != "" {
		conds = append(conds, "resources.parent_id = ?")
		args = append(args, q.ParentID)
	}
	if tenant := scopeOf(ctx); tenant != "" {
		conds = append(conds, tenantFilter)
		args = append(args, tenant)
	}
	if q.Where.SQL != "" {
		conds = append(conds, "("+q.Where.SQL+")")
		args = append(args, q.Where.Args...)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 500
	}
	query := "SELECT " + resourceColumns + ", seq, type, changed_ms FROM resource_changes AS resources WHERE " +
		strings.Join(conds, " AND ") + " ORDER BY resources.seq LIMIT ?"
	rows, err := s.db.WithContext(ctx).Raw(query, append(args, limit)...).Rows()
	if err != nil {
		return nil, fmt.Errorf("read the change log after %d: %w", q.After, err)
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var row resourceRow
		var c Change
		var ms int64
		if err := scanResource(rows, &row, &c.Seq, &c.Type, &ms); err != nil {
			return nil, fmt.Errorf("read the change log after %d: %w", q.After, err)
		}
		if c.Resource, err = fromRow(s.kinds, &row); err != nil {
			return nil, err
		}
		c.Time, c.Tenant = time.UnixMilli(ms).UTC(), row.Tenant
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the change log after %d: %w", q.After, err)
	}
	return out, nil
}

func (s *gormStore) MatchChanges(ctx context.Context, seqs []int64, where search.Where) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(seqs) == 0 {
		return out, nil
	}
	query := "SELECT seq FROM resource_changes AS resources WHERE resources.seq IN ?"
	args := []any{seqs}
	if tenant := scopeOf(ctx); tenant != "" {
		query += " AND " + tenantFilter
		args = append(args, tenant)
	}
	if where.SQL != "" {
		query += " AND (" + where.SQL + ")"
		args = append(args, where.Args...)
	}
	var matched []int64
	if err := s.db.WithContext(ctx).Raw(query, args...).Scan(&matched).Error; err != nil {
		return nil, fmt.Errorf("match %d change(s) against a search: %w", len(seqs), err)
	}
	for _, n := range matched {
		out[n] = true
	}
	return out, nil
}

func (s *gormStore) ChangeWindow(ctx context.Context) (ChangeWindow, error) {
	var w ChangeWindow
	err := s.db.WithContext(ctx).Raw("SELECT COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0) FROM resource_changes").
		Row().Scan(&w.Oldest, &w.Newest)
	if err != nil {
		return w, fmt.Errorf("read the change log's window: %w", err)
	}
	return w, nil
}

func (s *gormStore) PruneChanges(ctx context.Context, before time.Time, keep int64) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM resource_changes
		WHERE seq < (SELECT MAX(seq) FROM resource_changes)
		AND (changed_ms < ? OR seq <= (SELECT MAX(seq) FROM resource_changes) - ?)`, before.UnixMilli(), max(keep, 1))
	if res.Error != nil {
		return 0, fmt.Errorf("prune the change log: %w", res.Error)
	}
	return res.RowsAffected, nil
}

func (s *gormStore) ListenChanges(ctx context.Context) error {
	if s.backend != BackendPostgres {
		<-ctx.Done()
		return nil
	}
	// Number what other replicas left unnumbered even before this one
	// writes (the sequencer's sweep).
	s.seq.start.Do(s.startSequencer)
	failing := false
	for {
		err := s.listen(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !failing {
			s.log.Warn().Err(err).Msg("not listening for other replicas' changes; watches on this replica see them within the poll interval until it reconnects")
			failing = true
		}
		// Whatever was notified meanwhile is read by sequence anyway.
		s.signalChange()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// listen holds a connection of its own (outside the pool) on LISTEN.
func (s *gormStore) listen(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return fmt.Errorf("connect to listen for changes: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+changeChannel); err != nil {
		return fmt.Errorf("listen for changes: %w", err)
	}
	// Changes committed before the LISTEN took effect were not notified.
	s.signalChange()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			return fmt.Errorf("wait for change notifications: %w", err)
		}
		s.signalChange()
	}
}
