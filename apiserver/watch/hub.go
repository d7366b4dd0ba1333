package watch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
)

// Defaults of the log's tail and retention.
const (
	DefaultBookmark      = 30 * time.Second
	DefaultRetention     = 15 * time.Minute
	DefaultRetentionRows = 100_000
	// DefaultPoll is how often the tail reads the log without a wake-up:
	// what a lost notification costs at most.
	DefaultPoll = 2 * time.Second
	// readBatch is how many changes one read of the log takes.
	readBatch  = 500
	pruneEvery = time.Minute
)

// Config tunes a Hub; zero fields take the defaults.
type Config struct {
	// Enabled serves watches and has the store write the change log
	// they read. Off by default: on PostgreSQL the log's numbering
	// serialises the commits of every resource change (docs/benchmarks.md,
	// "Watches").
	Enabled bool
	// MaxWatchers caps the watches of this replica; MaxPerTenant those
	// of one tenancy on it.
	MaxWatchers  int
	MaxPerTenant int
	// Buffer is how many changes a watcher may fall behind before it is
	// dropped.
	Buffer int
	// Bookmark is how often an idle watch is sent a bookmark.
	Bookmark time.Duration
	// Retention and RetentionRows bound the log: changes older than
	// Retention, and beyond the newest RetentionRows, are pruned.
	Retention     time.Duration
	RetentionRows int64
	Poll          time.Duration
	// Render encodes a change's resource as a GET returns it; the
	// resource's own JSON when nil. The hub renders each change once for
	// all its watchers.
	Render func(ctx context.Context, c *store.Change) ([]byte, error)
	Logger zerolog.Logger
}

func (c *Config) defaults() {
	if c.MaxWatchers <= 0 {
		c.MaxWatchers = DefaultMaxWatchers
	}
	if c.MaxPerTenant <= 0 {
		c.MaxPerTenant = DefaultMaxPerTenant
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	if c.Bookmark <= 0 {
		c.Bookmark = DefaultBookmark
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.RetentionRows <= 0 {
		c.RetentionRows = DefaultRetentionRows
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Render == nil {
		c.Render = func(_ context.Context, c *store.Change) ([]byte, error) { return c.Resource.AppendJSON(nil) }
	}
}

// Drop reasons: why the hub ended a watch.
var (
	// ErrSlow: the watcher fell Buffer changes behind.
	ErrSlow = errors.New("the watch fell behind the changes and was closed")
	// ErrClosed: the replica is shutting down.
	ErrClosed = errors.New("the server is shutting down")
)

// Hub tails the change log once for a replica and fans each change out
// to the watchers that select it.
type Hub struct {
	log store.ChangeLog
	cfg Config

	mu       sync.Mutex
	last     int64 // the newest change fanned out
	watchers map[*Watcher]struct{}
	caps     caps
	closed   bool

	running sync.WaitGroup  // the tail and the listener
	ctx     context.Context // Start's: what shared renders run in
}

// entry is a change as the hub hands it to its watchers: rendered once,
// by the first watcher that sends it.
type entry struct {
	*store.Change
	once sync.Once
	obj  []byte
	err  error
	// events are the change framed as an event, by the watches'
	// ProjectKey: what each of the watches that ask for the same fields
	// sends. Never modified once stored.
	mu     sync.Mutex
	events map[string][]byte
}

// sharedEvents bounds how many framings of one change are kept: watches
// asking for more distinct fields= than this frame theirs each time.
const sharedEvents = 8

func (h *Hub) render(e *entry) ([]byte, error) {
	e.once.Do(func() { e.obj, e.err = h.cfg.Render(h.ctx, e.Change) })
	return e.obj, e.err
}

// event is the change framed as s's event. It is rendered once, and cut
// to fields= and framed once for all the watches with s's ProjectKey,
// not once a watcher: with hundreds of watchers on a replica that was a
// seventh of its CPU (docs/benchmarks.md, "Watchers during a burst: one
// projection for every watch").
func (h *Hub) event(e *entry, s *Stream) ([]byte, error) {
	obj, err := h.render(e)
	if err != nil {
		return nil, err
	}
	if s.Project != nil && s.ProjectKey == "" {
		return appendChange(nil, e.Change, obj, s.Project)
	}
	key := s.ProjectKey
	if s.Project == nil {
		key = ""
	}
	// Framed under the lock, so the watches that ask at once wait for
	// the one framing rather than each making its own.
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev, ok := e.events[key]; ok {
		return ev, nil
	}
	ev, err := appendChange(nil, e.Change, obj, s.Project)
	if err != nil {
		return nil, err
	}
	if e.events == nil {
		e.events = map[string][]byte{}
	}
	if len(e.events) < sharedEvents {
		e.events[key] = ev
	}
	return ev, nil
}

// NewHub builds a hub; Start begins its tail.
func NewHub(log store.ChangeLog, cfg Config) *Hub {
	cfg.defaults()
	return &Hub{log: log, cfg: cfg, watchers: map[*Watcher]struct{}{}, caps: newCaps(cfg.MaxWatchers, cfg.MaxPerTenant), ctx: context.Background()}
}

// Config is what the hub runs with, defaults filled in.
func (h *Hub) Config() Config { return h.cfg }

// Start tails the log from its newest change until ctx ends: it reads
// after every wake-up (a local commit, another replica's notification)
// and every Poll, and prunes the log every minute.
func (h *Hub) Start(ctx context.Context) error {
	w, err := h.log.ChangeWindow(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.last, h.ctx = w.Newest, ctx
	h.mu.Unlock()
	h.running.Add(2)
	go func() {
		defer h.running.Done()
		if err := h.log.ListenChanges(ctx); err != nil {
			h.cfg.Logger.Warn().Err(err).Msg("change notifications stopped")
		}
	}()
	go func() {
		defer h.running.Done()
		h.tail(ctx)
	}()
	return nil
}

// Wait returns once the tail Start began has stopped (its ctx ended).
func (h *Hub) Wait() { h.running.Wait() }

func (h *Hub) tail(ctx context.Context) {
	poll := time.NewTicker(h.cfg.Poll)
	defer poll.Stop()
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	h.prune(ctx)
	failing := false
	for {
		select {
		case <-ctx.Done():
			h.Close()
			return
		case <-h.log.ChangeSignal():
		case <-poll.C:
		case <-prune.C:
			h.prune(ctx)
			continue
		}
		err := h.drain(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			h.cfg.Logger.Warn().Err(err).Msg("change log not read; watches wait until it is")
			failing = true
		case err == nil && failing:
			h.cfg.Logger.Info().Msg("change log read again")
			failing = false
		}
	}
}

func (h *Hub) prune(ctx context.Context) {
	n, err := h.log.PruneChanges(ctx, time.Now().Add(-h.cfg.Retention), h.cfg.RetentionRows)
	if err != nil && ctx.Err() == nil {
		h.cfg.Logger.Warn().Err(err).Msg("change log not pruned")
	} else if n > 0 {
		h.cfg.Logger.Debug().Int64("changes", n).Msg("change log pruned")
	}
}

// drain reads and fans out every change after the last one.
func (h *Hub) drain(ctx context.Context) error {
	for {
		h.mu.Lock()
		after := h.last
		h.mu.Unlock()
		// The tail reads every tenancy's changes: its context carries no
		// caller, and each watcher is given only its own scope's.
		changes, err := h.log.ReadChanges(ctx, store.ChangeQuery{After: after, Limit: readBatch})
		if err != nil {
			return err
		}
		h.fanOut(changes)
		if len(changes) < readBatch {
			return nil
		}
	}
}

// fanOut hands each change to the watchers that select it, dropping a
// watcher whose buffer is full.
func (h *Hub) fanOut(changes []store.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range changes {
		c := &changes[i]
		if c.Seq <= h.last {
			continue
		}
		e := &entry{Change: c}
		for w := range h.watchers {
			if !w.selects(c) {
				continue
			}
			select {
			case w.ch <- e:
			default:
				h.dropLocked(w, ErrSlow)
			}
		}
		h.last = c.Seq
	}
}

// Last is the newest change the hub has fanned out: a list read after it
// reflects at least every change up to it, so a watch from it misses
// nothing.
func (h *Hub) Last() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Watcher is one watch's subscription to the hub.
type Watcher struct {
	hub      *Hub
	tenant   string // the caller's scope: "" sees every tenancy's
	kind     string
	parentID string
	ch       chan *entry
	done     chan struct{}
	err      error // why the hub dropped it; set before done closes
	member   bool  // counted in the hub (guarded by hub.mu)
}

func (w *Watcher) selects(c *store.Change) bool {
	if w.tenant != "" && c.Tenant != w.tenant {
		return false
	}
	if w.kind != "" && c.Resource.Kind != w.kind {
		return false
	}
	if w.parentID == "" {
		return true
	}
	return c.Resource.OwnerReferences != nil && c.Resource.OwnerReferences.ID == w.parentID
}

// Subscribe registers a watch of the caller ctx carries, of a kind ("":
// every kind) and, when parentID is set, of that parent's children. It
// returns the version the live changes start after: every later change
// the watch selects arrives on the watcher; those up to it are the
// log's. A cap refuses it with a *CapError, a closing hub with ErrClosed.
func (h *Hub) Subscribe(ctx context.Context, kind, parentID string) (*Watcher, int64, error) {
	w := &Watcher{hub: h, tenant: tenancy.FromContext(ctx).Key, kind: kind, parentID: parentID,
		ch: make(chan *entry, h.cfg.Buffer), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, 0, ErrClosed
	}
	if err := h.caps.acquire(w.tenant); err != nil {
		return nil, 0, err
	}
	w.member = true
	h.watchers[w] = struct{}{}
	return w, h.last, nil
}

// dropLocked ends a watcher's subscription with a reason; hub.mu held.
func (h *Hub) dropLocked(w *Watcher, reason error) {
	if !w.member {
		return
	}
	w.member = false
	delete(h.watchers, w)
	h.caps.release(w.tenant)
	w.err = reason
	close(w.done)
}

// Close drops every watcher (ErrClosed) and refuses new ones: on
// shutdown, streams end at once instead of holding the drain.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.watchers {
		h.dropLocked(w, ErrClosed)
	}
}

// Watching counts the watchers of the hub.
func (h *Hub) Watching() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}

// Close ends the subscription; the caller's stream is over.
func (w *Watcher) Close() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	if w.member {
		w.member = false
		delete(w.hub.watchers, w)
		w.hub.caps.release(w.tenant)
	}
}

// Done is closed when the hub dropped the watcher; Err then says why.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err is why the hub dropped the watcher (ErrSlow, ErrClosed).
func (w *Watcher) Err() error {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	return w.err
}
