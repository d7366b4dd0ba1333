//go:build integration

package api

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

// sseEvent is one Server-Sent Event of a watch.
type sseEvent struct {
	Name string // the event: line
	ID   string // the id: line
	Data struct {
		Type            string          `json:"type"`
		ResourceVersion string          `json:"resource_version"`
		Object          json.RawMessage `json:"object"`
	}
}

func (ev sseEvent) version(t *testing.T) int64 {
	t.Helper()
	n, err := strconv.ParseInt(ev.Data.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("event %s: resource_version %q is not an integer", ev.Name, ev.Data.ResourceVersion)
	}
	return n
}

func (ev sseEvent) objectID(t *testing.T) string {
	t.Helper()
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ev.Data.Object, &o); err != nil {
		t.Fatalf("event %s: object %s: %v", ev.Name, ev.Data.Object, err)
	}
	return o.ID
}

// stream is an open watch.
type stream struct {
	t      *testing.T
	cancel context.CancelFunc
	events chan sseEvent
	first  sseEvent // the opening BOOKMARK
}

// watch opens a watch as a caller (nil: none) and waits for its opening
// BOOKMARK, after which every change reaches it.
func (e *env) watch(who *caller, path string, header http.Header) *stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if who != nil {
		for k, v := range who.header {
			req.Header[k] = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		resp.Body.Close()
		e.t.Fatalf("GET %s = %d %s, want 200 text/event-stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{t: e.t, cancel: cancel, events: make(chan sseEvent, 100)}
	go func() {
		defer resp.Body.Close()
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		var data strings.Builder
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if err := json.Unmarshal([]byte(data.String()), &ev.Data); err != nil {
					e.t.Errorf("watch %s: event data %q: %v", path, data.String(), err)
					return
				}
				s.events <- ev
				ev, data = sseEvent{}, strings.Builder{}
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data.WriteString(strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	e.t.Cleanup(s.close)
	s.first = s.next()
	if s.first.Name != watch.Bookmark {
		e.t.Fatalf("watch %s opened with %s, want a BOOKMARK", path, s.first.Name)
	}
	return s
}

func (s *stream) close() { s.cancel() }

// next is the next event, bookmarks included.
func (s *stream) next() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		s.t.Fatal("no watch event within 10s")
	}
	return sseEvent{}
}

// change is the next event that is not a bookmark.
func (s *stream) change() sseEvent {
	s.t.Helper()
	for {
		if ev := s.next(); ev.Name != watch.Bookmark {
			return ev
		}
	}
}

// quiet fails the test if a change arrives within d.
func (s *stream) quiet(d time.Duration) {
	s.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if ok && ev.Name != watch.Bookmark {
				s.t.Fatalf("unexpected %s of %s (version %s)", ev.Name, ev.objectID(s.t), ev.Data.ResourceVersion)
			}
		case <-deadline:
			return
		}
	}
}

func expectChange(t *testing.T, ev sseEvent, typ, id string, after int64) int64 {
	t.Helper()
	if ev.Name != typ || ev.Data.Type != typ {
		t.Fatalf("event %s (type %s) of %s, want %s of %s", ev.Name, ev.Data.Type, ev.objectID(t), typ, id)
	}
	if got := ev.objectID(t); got != id {
		t.Fatalf("%s of %s, want of %s", typ, got, id)
	}
	v := ev.version(t)
	if v <= after || ev.ID != ev.Data.ResourceVersion {
		t.Fatalf("%s of %s at version %d (id %s), want above %d and the same as the event id", typ, id, v, ev.ID, after)
	}
	return v
}

func withWatch(cfg watch.Config) option {
	cfg.Enabled = true
	return func(o *apiserver.Options) { o.Watch = cfg }
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestWatchCreateUpdateDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		s := e.watch(nil, base+"/clusters?watch=true", nil)
		c := e.createCluster("watched")
		ev := s.change()
		v := expectChange(t, ev, store.ChangeAdded, c.ID, 0)
		if got := e.do("GET", c.Href, nil).expect(200); !jsonEqual(t, ev.Data.Object, got.body) {
			t.Errorf("ADDED object %s, want what GET returns: %s", ev.Data.Object, got.body)
		}
		e.do("PATCH", c.Href, map[string]any{"labels": map[string]string{"env": "prod"}}).expect(200)
		ev = s.change()
		v = expectChange(t, ev, store.ChangeModified, c.ID, v)
		if !strings.Contains(string(ev.Data.Object), `"env":"prod"`) {
			t.Errorf("MODIFIED after a label change has no label: %s", ev.Data.Object)
		}
		e.report(c, report("validation", 2, "True")).expect(201)
		ev = s.change()
		v = expectChange(t, ev, store.ChangeModified, c.ID, v)
		if got := e.do("GET", c.Href, nil).expect(200); !jsonEqual(t, ev.Data.Object, got.body) {
			t.Errorf("MODIFIED object after a status report %s, want what GET returns: %s", ev.Data.Object, got.body)
		}
		// The same report again moves only last_updated_time: no event.
		if again := e.report(c, report("validation", 2, "True")); again.status != 201 && again.status != 204 {
			t.Fatalf("the report again = %d: %s", again.status, again.body)
		}
		e.do("DELETE", c.Href, nil).expect(202)
		ev = s.change()
		v = expectChange(t, ev, store.ChangeModified, c.ID, v)
		if !strings.Contains(string(ev.Data.Object), `"deleted_time"`) {
			t.Errorf("MODIFIED after DELETE has no deleted_time: %s", ev.Data.Object)
		}
		e.do("POST", c.Href+"/force-delete", `{"reason":"watch test"}`).expect(204)
		expectChange(t, s.change(), store.ChangeDeleted, c.ID, v)
		s.quiet(300 * time.Millisecond)
	})
}

// TestWatchWithFields: a watch's fields= cuts each event's object as it
// cuts a GET's, and watches asking for the same fields (which share the
// server's projection of a change) or for other fields each get their
// own cut.
func TestWatchWithFields(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		narrow := []*stream{
			e.watch(nil, base+"/clusters?watch=true&fields=id,status.conditions", nil),
			e.watch(nil, base+"/clusters?watch=true&fields=id,status.conditions", nil),
		}
		named := e.watch(nil, base+"/clusters?watch=true&fields=id,name", nil)
		whole := e.watch(nil, base+"/clusters?watch=true", nil)
		c := e.createCluster("watched-fields")
		for _, s := range narrow {
			ev := s.change()
			expectChange(t, ev, store.ChangeAdded, c.ID, 0)
			if got := e.do("GET", c.Href+"?fields=id,status.conditions", nil).expect(200); !jsonEqual(t, ev.Data.Object, got.body) {
				t.Errorf("ADDED object with fields=id,status.conditions %s, want what such a GET returns: %s", ev.Data.Object, got.body)
			}
		}
		ev := named.change()
		expectChange(t, ev, store.ChangeAdded, c.ID, 0)
		if got := e.do("GET", c.Href+"?fields=id,name", nil).expect(200); !jsonEqual(t, ev.Data.Object, got.body) {
			t.Errorf("ADDED object with fields=id,name %s, want what such a GET returns: %s", ev.Data.Object, got.body)
		}
		ev = whole.change()
		expectChange(t, ev, store.ChangeAdded, c.ID, 0)
		if got := e.do("GET", c.Href, nil).expect(200); !jsonEqual(t, ev.Data.Object, got.body) {
			t.Errorf("ADDED object without fields %s, want what GET returns: %s", ev.Data.Object, got.body)
		}
		e.do("GET", base+"/clusters?watch=true&fields=nosuch", nil).problem(400, "HYPERFLEET-VAL-003")
	})
}

func TestWatchNodePoolsOfACluster(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c1, c2 := e.createCluster("pools-one"), e.createCluster("pools-two")
		s := e.watch(nil, base+"/clusters/"+c1.ID+"/nodepools?watch=true", nil)
		e.createNodePool(c2.ID, "other-np")
		np := e.createNodePool(c1.ID, "own-np")
		expectChange(t, s.change(), store.ChangeAdded, np.ID, 0)
		// Removing the cluster removes its node pools: each is DELETED.
		e.do("DELETE", c1.Href, nil).expect(202)
		expectChange(t, s.change(), store.ChangeModified, np.ID, 0)
		e.do("POST", c1.Href+"/force-delete", `{"reason":"watch test"}`).expect(204)
		expectChange(t, s.change(), store.ChangeDeleted, np.ID, 0)
		e.do("GET", base+"/clusters/"+c1.ID+"/nodepools?watch=true&page=2", nil).problem(400, "HYPERFLEET-VAL-003")
		e.do("GET", base+"/clusters/01234567-89ab-cdef-0123-456789abcdef/nodepools?watch=true", nil).problem(404, "HYPERFLEET-NTF-001")
	})
}

func TestWatchSearchAndTenancy(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false))
		s := e.watch(&acme, base+"/clusters?watch=true&search="+urlQuery("labels.env='prod'"), nil)
		all := e.watch(&system, base+"/clusters?watch=true", nil)
		prod := clusterBody("prod-a")
		prod["labels"] = map[string]string{"env": "prod"}
		devBody := clusterBody("dev-a")
		devBody["labels"] = map[string]string{"env": "dev"}
		foreign := e.as(globex, "POST", base+"/clusters", prod).expect(201).resource()
		dev := e.as(acme, "POST", base+"/clusters", devBody).expect(201).resource()
		own := e.as(acme, "POST", base+"/clusters", prod).expect(201).resource()
		// acme's watch: neither globex's cluster nor its own dev one.
		expectChange(t, s.change(), store.ChangeAdded, own.ID, 0)
		// A change that leaves the search is not sent either.
		e.as(acme, "PATCH", own.Href, map[string]any{"labels": map[string]string{"env": "dev"}}).expect(200)
		e.as(globex, "PATCH", foreign.Href, map[string]any{"labels": map[string]string{"env": "prod", "x": "y"}}).expect(200)
		s.quiet(500 * time.Millisecond)
		// The system caller sees every tenancy's.
		for _, id := range []string{foreign.ID, dev.ID, own.ID, own.ID, foreign.ID} {
			if got := all.change().objectID(t); got != id {
				t.Fatalf("system watch: change of %s, want of %s", got, id)
			}
		}
		// Resuming from the start, acme's history holds its own change only.
		r := e.watch(&acme, base+"/clusters?watch=true&resourceVersion=0", nil)
		expectChange(t, r.change(), store.ChangeAdded, dev.ID, 0)
		expectChange(t, r.change(), store.ChangeAdded, own.ID, 0)
		expectChange(t, r.change(), store.ChangeModified, own.ID, 0)
		r.quiet(300 * time.Millisecond)
		e.as(acme, "GET", base+"/clusters?watch=true&search="+urlQuery("nope='x'"), nil).problem(400, "HYPERFLEET-VAL-004")
	})
}

func TestWatchResumeAfterDisconnect(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		// A list's header is a version to watch from.
		listed := e.do("GET", base+"/clusters", nil).expect(200)
		from := listed.header.Get(apiserver.ResourceVersionHeader)
		if from == "" {
			t.Fatalf("a list has no %s header", apiserver.ResourceVersionHeader)
		}
		s := e.watch(nil, base+"/clusters?watch=true&resourceVersion="+from, nil)
		c1 := e.createCluster("resume-one")
		seen := expectChange(t, s.change(), store.ChangeAdded, c1.ID, 0)
		s.close() // a forced disconnect
		c2 := e.createCluster("resume-two")
		e.do("PATCH", c1.Href, map[string]any{"labels": map[string]string{"k": "v"}}).expect(200)
		r := e.watch(nil, base+"/clusters?watch=true&resourceVersion="+strconv.FormatInt(seen, 10), nil)
		v := expectChange(t, r.change(), store.ChangeAdded, c2.ID, seen)
		v = expectChange(t, r.change(), store.ChangeModified, c1.ID, v)
		r.quiet(300 * time.Millisecond)
		// An EventSource resumes with Last-Event-ID.
		l := e.watch(nil, base+"/clusters?watch=true", http.Header{"Last-Event-ID": {strconv.FormatInt(seen, 10)}})
		expectChange(t, l.change(), store.ChangeAdded, c2.ID, seen)
		expectChange(t, l.change(), store.ChangeModified, c1.ID, 0)
		// Live changes follow the history, once each.
		c3 := e.createCluster("resume-three")
		expectChange(t, r.change(), store.ChangeAdded, c3.ID, v)

		// Beyond the history: 410, and after pruning, an old version too.
		e.do("GET", base+"/clusters?watch=true&resourceVersion=999999", nil).problem(410, "HYPERFLEET-NTF-004")
		if _, err := e.app.Store.PruneChanges(context.Background(), time.Now().Add(time.Hour), 1); err != nil {
			t.Fatal(err)
		}
		p := e.do("GET", base+"/clusters?watch=true&resourceVersion="+strconv.FormatInt(seen, 10), nil).problem(410, "HYPERFLEET-NTF-004")
		if p.Status != 410 || !strings.Contains(p.Detail, "list again") {
			t.Errorf("410 detail %q does not say to list again", p.Detail)
		}
		for _, bad := range []string{"watch=true&resourceVersion=abc", "watch=true&resourceVersion=-1", "watch=maybe", "watch=true&orderBy=name"} {
			e.do("GET", base+"/clusters?"+bad, nil).problem(400, "HYPERFLEET-VAL-003")
		}
	})
}

func TestWatchBookmarksIdleStreams(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		s := e.watch(nil, base+"/clusters?watch=true", nil)
		c := e.createCluster("bookmarked")
		v := expectChange(t, s.change(), store.ChangeAdded, c.ID, 0)
		// A node pool's change is not this watch's, but the bookmark moves
		// past it: a resume from there does not read it again.
		e.createNodePool(c.ID, "np-bookmarked")
		for {
			ev := s.next()
			if ev.Name != watch.Bookmark {
				t.Fatalf("unexpected %s", ev.Name)
			}
			if ev.version(t) > v {
				break
			}
		}
	}, withWatch(watch.Config{Bookmark: 100 * time.Millisecond}))
}

func TestWatchAcrossReplicas(t *testing.T) {
	if !testenv.Integration {
		t.Skip("PostgreSQL runs in the integration tier")
	}
	// No poll within the test: only the other replica's notification can
	// wake this one's tail.
	e := newEnv(t, store.BackendPostgres)
	other := e.restart(withWatch(watch.Config{Poll: time.Hour}))
	s := other.watch(nil, base+"/clusters?watch=true", nil)
	c := e.createCluster("replicated")
	v := expectChange(t, s.change(), store.ChangeAdded, c.ID, 0)
	e.do("PATCH", c.Href, map[string]any{"spec": map[string]any{"x": 1}}).expect(200)
	v = expectChange(t, s.change(), store.ChangeModified, c.ID, v)
	// And the other way round. A watch without a version starts at the
	// newest change, v, even where its replica's tail has not read it.
	back := e.watch(nil, base+"/clusters?watch=true", nil)
	c2 := other.createCluster("replicated-back")
	expectChange(t, back.change(), store.ChangeAdded, c2.ID, v)
}

// Contract: without a resource version a watch starts at the newest
// change, wherever this replica's tail is. The change here is written
// into the log behind the tail's back (numbered, no wake-up, and the
// tail polls hourly), as a change numbered after its commit can be on
// PostgreSQL when its write has already answered: the watch must not
// send it as if it came after.
func TestWatchWithoutVersionStartsAtTheNewestChange(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withWatch(watch.Config{Poll: time.Hour}))
		c := e.createCluster("before-the-watch")
		driver, url := "pgx", e.opts.Store.URL
		if b == store.BackendSQLite {
			driver = "sqlite"
		}
		db, err := sql.Open(driver, url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// A copy of the newest change, one version later.
		const cols = "type, changed_ms, id, kind, parent_id, name, generation, spec, labels, conditions, refs, " +
			"created_time, updated_time, deleted_time, created_by, updated_by, deleted_by, tenant"
		if _, err := db.Exec(`INSERT INTO resource_changes (seq, ` + cols + `)
			SELECT seq + 1, ` + cols + ` FROM resource_changes WHERE seq = (SELECT MAX(seq) FROM resource_changes)`); err != nil {
			t.Fatalf("write a change behind the tail: %v", err)
		}
		var newest int64
		if err := db.QueryRow(`SELECT MAX(seq) FROM resource_changes`).Scan(&newest); err != nil {
			t.Fatal(err)
		}
		s := e.watch(nil, base+"/clusters?watch=true", nil)
		e.do("PATCH", c.Href, map[string]any{"labels": map[string]string{"after": "watch"}}).expect(200)
		// The PATCH's change, above the one written behind the tail; the
		// copy of the create is not sent.
		expectChange(t, s.change(), store.ChangeModified, c.ID, newest)
	})
}

func TestWatchCaps(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false), withWatch(watch.Config{MaxWatchers: 2, MaxPerTenant: 1}))
		first := e.watch(&acme, base+"/clusters?watch=true", nil)
		e.as(acme, "GET", base+"/clusters?watch=true", nil).problem(429, "HYPERFLEET-SVC-007")
		e.watch(&globex, base+"/clusters?watch=true", nil)
		full := e.as(system, "GET", base+"/clusters?watch=true", nil)
		full.problem(503, "HYPERFLEET-SVC-006")
		if full.header.Get("Retry-After") == "" {
			t.Error("a 503 for the replica's cap has no Retry-After")
		}
		// A closed watch frees its place.
		first.close()
		deadline := time.Now().Add(5 * time.Second)
		for e.app.Watch.Watching() > 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		e.watch(&acme, base+"/clusters?watch=true", nil)
	})
}

// TestWatchOutlivesTimeoutsAndEndsOnShutdown runs the API on its own
// HTTP server (the timeouts are the server's): a watch outlives the read
// and request timeouts, and a shutdown ends it with an ERROR event.
func TestWatchOutlivesTimeoutsAndEndsOnShutdown(t *testing.T) {
	o := apiserver.Options{
		Store:      storeConfig(t, store.BackendSQLite),
		Registered: map[string][]string{"Cluster": {"validation"}, "NodePool": {}},
		Logger:     zerolog.Nop(),
		Server:     apiserver.Config{Version: "test", ReadTimeout: 300 * time.Millisecond, RequestTimeout: 300 * time.Millisecond},
		Watch:      watch.Config{Enabled: true, Bookmark: 100 * time.Millisecond},
	}
	app, err := apiserver.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- app.Server.Serve(ctx, ln) }()
	e := &env{t: t, url: "http://" + ln.Addr().String(), app: app, opts: o, backend: store.BackendSQLite}
	s := e.watch(nil, base+"/clusters?watch=true", nil)
	time.Sleep(time.Second) // past both timeouts
	c := e.createCluster("outlives")
	expectChange(t, s.change(), store.ChangeAdded, c.ID, 0)
	stop()
	ev := s.change()
	if ev.Name != watch.Error || !strings.Contains(string(ev.Data.Object), `"HYPERFLEET-SVC-001"`) {
		t.Errorf("on shutdown the watch got %s %s, want an ERROR with HYPERFLEET-SVC-001", ev.Name, ev.Data.Object)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop within 10s of its context ending, with a watch open")
	}
}

// Contract: a watch event carries the resource as GET returns it, so its
// spec's numbers come back as sent on both backends, and a search on the
// spec selects the events as it selects a list's items.
func TestWatchSpecAsSentAndSearched(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		s := e.watch(nil, base+"/clusters?watch=true&search="+urlQuery("spec.region='eu'"), nil)
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"watch-us","spec":{"region":"us"}}`).expect(201)
		eu := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"watch-eu","spec":{"region":"eu","n":1E+2,"m":-5e-324}}`).expect(201).resource()
		ev := s.change()
		expectChange(t, ev, store.ChangeAdded, eu.ID, 0)
		for _, want := range []string{`1E+2`, `-5e-324`} {
			if !strings.Contains(string(ev.Data.Object), want) {
				t.Errorf("ADDED event's object %s does not hold %s as sent", ev.Data.Object, want)
			}
		}
		s.quiet(300 * time.Millisecond) // the "us" cluster never matched
	})
}

// Contract: watches are served unless the API runs with --watch=false;
// off, a watch is a 400 naming the setting, a list carries no resource
// version, and no change is written to the change log. (That they are on
// by default, TestServeBinary checks on the binary.)
func TestWatchOff(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, func(o *apiserver.Options) { o.Watch = watch.Config{} })
		p := e.do("GET", base+"/clusters?watch=true", nil).problem(400, "HYPERFLEET-VAL-003")
		if !strings.Contains(p.Detail, "--watch") {
			t.Errorf("detail %q does not name --watch", p.Detail)
		}
		c := e.createCluster("no-log")
		e.do("PATCH", c.Href, map[string]any{"labels": map[string]string{"env": "dev"}}).expect(200)
		list := e.do("GET", base+"/clusters", nil).expect(200)
		if v := list.header.Get(apiserver.ResourceVersionHeader); v != "" {
			t.Errorf("a list carries %s %q with watches off", apiserver.ResourceVersionHeader, v)
		}
		w, err := e.app.Store.ChangeWindow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if w.Newest != 0 {
			t.Errorf("the change log holds changes up to %d with watches off, want none", w.Newest)
		}
	})
}
