package watch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/resource"
)

// fakeLog is a change log in memory. A Where whose SQL is "odd" matches
// the changes of odd Seq: enough to tell that the search was applied.
type fakeLog struct {
	mu      sync.Mutex
	changes []store.Change
	signal  chan struct{}
}

func newFakeLog() *fakeLog { return &fakeLog{signal: make(chan struct{}, 1)} }

func (f *fakeLog) add(kind, id, parentID, tenant string) int64 {
	f.mu.Lock()
	seq := int64(len(f.changes) + 1)
	r := resource.Resource{Kind: kind, ID: id}
	if parentID != "" {
		r.OwnerReferences = &resource.OwnerReference{ID: parentID}
	}
	f.changes = append(f.changes, store.Change{Seq: seq, Type: store.ChangeModified, Resource: r, Tenant: tenant})
	f.mu.Unlock()
	select {
	case f.signal <- struct{}{}:
	default:
	}
	return seq
}

func matches(where search.Where, seq int64) bool { return where.SQL != "odd" || seq%2 == 1 }

func (f *fakeLog) ReadChanges(ctx context.Context, q store.ChangeQuery) ([]store.Change, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	scope := tenancy.FromContext(ctx).Key
	var out []store.Change
	for _, c := range f.changes {
		if c.Seq <= q.After || q.UpTo > 0 && c.Seq > q.UpTo || q.Kind != "" && c.Resource.Kind != q.Kind ||
			scope != "" && c.Tenant != scope || !matches(q.Where, c.Seq) {
			continue
		}
		if out = append(out, c); len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func (f *fakeLog) MatchChanges(_ context.Context, seqs []int64, where search.Where) (map[int64]bool, error) {
	out := map[int64]bool{}
	for _, s := range seqs {
		out[s] = matches(where, s)
	}
	return out, nil
}

func (f *fakeLog) ChangeWindow(context.Context) (store.ChangeWindow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.changes) == 0 {
		return store.ChangeWindow{}, nil
	}
	return store.ChangeWindow{Oldest: 1, Newest: int64(len(f.changes))}, nil
}

func (f *fakeLog) PruneChanges(context.Context, time.Time, int64) (int64, error) { return 0, nil }
func (f *fakeLog) ChangeSignal() <-chan struct{}                                 { return f.signal }
func (f *fakeLog) ListenChanges(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func startHub(t *testing.T, log *fakeLog, cfg Config) *Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := NewHub(log, cfg)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); h.Wait() })
	return h
}

func tenant(key string) context.Context {
	return tenancy.WithCaller(context.Background(), tenancy.Caller{Key: key})
}

func receive(t *testing.T, w *Watcher) *store.Change {
	t.Helper()
	select {
	case e := <-w.ch:
		return e.Change
	case <-time.After(5 * time.Second):
		t.Fatal("no change within 5s")
		return nil
	}
}

func TestHubFansOutWhatEachWatcherSelects(t *testing.T) {
	log := newFakeLog()
	h := startHub(t, log, Config{})
	clusters, _, err := h.Subscribe(tenant("org=acme"), "Cluster", "")
	if err != nil {
		t.Fatal(err)
	}
	pools, _, err := h.Subscribe(context.Background(), "NodePool", "c1")
	if err != nil {
		t.Fatal(err)
	}
	log.add("Cluster", "foreign", "", "org=globex")
	log.add("NodePool", "other-parent", "c2", "org=acme")
	own := log.add("Cluster", "own", "", "org=acme")
	pool := log.add("NodePool", "np", "c1", "org=globex")
	if c := receive(t, clusters); c.Seq != own {
		t.Errorf("acme's cluster watch got change %d (%s), want %d: another tenancy's or kind's change was delivered", c.Seq, c.Resource.ID, own)
	}
	if c := receive(t, pools); c.Seq != pool {
		t.Errorf("c1's node pool watch got change %d (%s), want %d", c.Seq, c.Resource.ID, pool)
	}
	if h.Last() != pool {
		t.Errorf("Last = %d, want %d", h.Last(), pool)
	}
}

func TestHubDropsASlowWatcher(t *testing.T) {
	log := newFakeLog()
	h := startHub(t, log, Config{Buffer: 2, MaxWatchers: 1})
	w, _, err := h.Subscribe(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		log.add("Cluster", string(rune('a'+i)), "", "")
		time.Sleep(20 * time.Millisecond) // one drain each
	}
	select {
	case <-w.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a watcher 3 changes behind with a buffer of 2 was not dropped")
	}
	if !errors.Is(w.Err(), ErrSlow) {
		t.Errorf("Err = %v, want ErrSlow", w.Err())
	}
	// Its place is free again.
	w2, _, err := h.Subscribe(context.Background(), "", "")
	if err != nil {
		t.Fatalf("subscribe after the slow watcher was dropped: %v", err)
	}
	w2.Close()
	w.Close() // after the drop: a no-op
	if n := h.Watching(); n != 0 {
		t.Errorf("Watching = %d after both closed, want 0", n)
	}
}

func TestHubCloseEndsWatchers(t *testing.T) {
	h := startHub(t, newFakeLog(), Config{})
	w, _, err := h.Subscribe(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	<-w.Done()
	if !errors.Is(w.Err(), ErrClosed) {
		t.Errorf("Err = %v, want ErrClosed", w.Err())
	}
	if _, _, err := h.Subscribe(context.Background(), "", ""); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe on a closed hub = %v, want ErrClosed", err)
	}
}

// events collects what a Serve sends.
type events struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (e *events) send(b []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf.Write(b)
	return nil
}

// ids lists the id lines sent so far.
func (e *events) ids() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, line := range strings.Split(e.buf.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			out = append(out, v)
		}
	}
	return out
}

func (e *events) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		got := e.buf.String()
		e.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q within 5s; sent:\n%s", want, e.buf.String())
}

func TestServeResumesWithoutGapOrRepeat(t *testing.T) {
	log := newFakeLog()
	for range 4 {
		log.add("Cluster", "c", "", "")
	}
	h := startHub(t, log, Config{Bookmark: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, start, err := h.Subscribe(ctx, "Cluster", "")
	if err != nil {
		t.Fatal(err)
	}
	var got events
	done := make(chan error, 1)
	go func() {
		done <- h.Serve(ctx, w, start, Stream{Kind: "Cluster", From: 1,
			Send: got.send})
	}()
	log.add("NodePool", "np", "c", "") // not selected
	log.add("Cluster", "c", "", "")
	got.waitFor(t, "id: 6\n")
	cancel()
	<-done
	// The first bookmark at the resume point, then 2..4 from the log and
	// 6 from the hub.
	if ids := strings.Join(got.ids(), ","); ids != "1,2,3,4,6" {
		t.Errorf("ids sent = %s, want 1,2,3,4,6", ids)
	}
}

func TestServeAppliesTheSearchAndBookmarks(t *testing.T) {
	log := newFakeLog()
	log.add("Cluster", "c", "", "")
	log.add("Cluster", "c", "", "")
	h := startHub(t, log, Config{Bookmark: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, start, err := h.Subscribe(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got events
	done := make(chan error, 1)
	go func() {
		done <- h.Serve(ctx, w, start, Stream{Where: search.Where{SQL: "odd"}, From: 0,
			Send: got.send})
	}()
	log.add("Cluster", "c", "", "") // 3: matches
	log.add("Cluster", "c", "", "") // 4: does not
	got.waitFor(t, "event: MODIFIED\nid: 3\n")
	// A bookmark moves past 4, which the search left out.
	got.waitFor(t, "event: BOOKMARK\nid: 4\n")
	cancel()
	<-done
	for _, id := range got.ids() {
		if id == "2" {
			t.Errorf("change 2, which the search does not match, was sent: %v", got.ids())
		}
	}
}

func TestServeSendsAnErrorWhenDropped(t *testing.T) {
	h := startHub(t, newFakeLog(), Config{})
	w, start, err := h.Subscribe(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got events
	done := make(chan error, 1)
	go func() {
		done <- h.Serve(context.Background(), w, start, Stream{From: -1, Path: "/x",
			Send: got.send})
	}()
	got.waitFor(t, "event: BOOKMARK")
	h.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, `event: ERROR`)
	got.waitFor(t, `"code":"HYPERFLEET-SVC-001"`)
}

// TestServeSharesAProjectionBetweenWatches: watches asking for the same
// fields= receive the same event, projected once for all of them; a watch
// with other fields, or whole resources, gets its own.
func TestServeSharesAProjectionBetweenWatches(t *testing.T) {
	log := newFakeLog()
	h := startHub(t, log, Config{Bookmark: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	projected := map[string]int{}
	projector := func(key string) func([]byte) ([]byte, error) {
		return func([]byte) ([]byte, error) {
			mu.Lock()
			projected[key]++
			mu.Unlock()
			return []byte(`{"cut":"` + key + `"}`), nil
		}
	}
	streams := []Stream{
		{Project: projector("id"), ProjectKey: "id"},
		{Project: projector("id"), ProjectKey: "id"},
		{Project: projector("id"), ProjectKey: "id"},
		{Project: projector("name"), ProjectKey: "name"},
		{Project: projector("own")}, // no key: never shared
		{},                          // whole resources
	}
	got := make([]events, len(streams))
	done := make(chan error, len(streams))
	for i, s := range streams {
		w, start, err := h.Subscribe(ctx, "", "")
		if err != nil {
			t.Fatal(err)
		}
		s.From, s.Send = -1, got[i].send
		go func() { done <- h.Serve(ctx, w, start, s) }()
	}
	for i := range got {
		got[i].waitFor(t, "event: BOOKMARK")
	}
	log.add("Cluster", "c1", "", "")
	log.add("Cluster", "c2", "", "")
	want := []string{`"object":{"cut":"id"}`, `"object":{"cut":"id"}`, `"object":{"cut":"id"}`, `"object":{"cut":"name"}`, `"object":{"cut":"own"}`, `"id":"c2"`}
	for i := range got {
		got[i].waitFor(t, "id: 2\n")
		got[i].waitFor(t, want[i])
	}
	cancel()
	for range streams {
		<-done
	}
	for i := 1; i < 3; i++ {
		if a, b := got[0].buf.String(), got[i].buf.String(); a != b {
			t.Errorf("watches with the same fields sent different streams:\n%s\n---\n%s", a, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if projected["id"] != 2 || projected["name"] != 2 || projected["own"] != 2 {
		t.Errorf("projections of 2 changes = %v, want each key projected once a change (id 2, name 2, own 2)", projected)
	}
}

// TestEventBoundsTheSharedFramings: past sharedEvents distinct fields=,
// a change is still framed right for each watch, just not kept.
func TestEventBoundsTheSharedFramings(t *testing.T) {
	h := NewHub(newFakeLog(), Config{})
	e := &entry{Change: &store.Change{Seq: 7, Type: store.ChangeModified, Resource: resource.Resource{Kind: "Cluster", ID: "c"}}}
	for i := range sharedEvents + 3 {
		key := strings.Repeat("k", i+1)
		s := Stream{ProjectKey: key, Project: func([]byte) ([]byte, error) { return []byte(`"` + key + `"`), nil }}
		ev, err := h.event(e, &s)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"object":"` + key + `"`; !strings.Contains(string(ev), want) {
			t.Fatalf("event for fields %q = %s, want it to contain %s", key, ev, want)
		}
	}
	if len(e.events) != sharedEvents {
		t.Errorf("kept %d framings of one change, want at most %d", len(e.events), sharedEvents)
	}
}
