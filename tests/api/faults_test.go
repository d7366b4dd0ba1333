//go:build integration

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
)

// PostgreSQL crashes and comes back while clients create clusters and
// report statuses. While it is down the API says so: /readyz is 503 naming
// the database, and every request gets a problem+json 503 with
// Retry-After, never a 500. It recovers on its own (no restart of the API),
// and nothing it acknowledged before the crash is lost: every 201 cluster
// is there with its outbox row, every 201 status report is stored.
func TestPostgresRestartUnderWriteLoad(t *testing.T) {
	pg := testenv.StartPostgres(t)
	e := newEnv(t, store.BackendPostgres, func(o *apiserver.Options) {
		o.Store = store.Config{Driver: store.BackendPostgres, URL: pg.URL()}
	})

	load := startWriteLoad(e, 4)
	load.waitAccepted(t, 20)

	pg.Crash()
	crashedAt := load.accepted()

	// Down: readiness, writes and reads all say the database is unavailable.
	code, body := e.get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"database":"unavailable`) {
		t.Errorf("/readyz with the database down = %d %s, want 503 naming the database", code, body)
	}
	down := e.do("POST", base+"/clusters", clusterBody("while-down"))
	p := down.problem(http.StatusServiceUnavailable, "HYPERFLEET-SVC-001")
	if down.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if !strings.Contains(p.Detail, "database is unavailable") {
		t.Errorf("503 detail = %q, want it to say the database is unavailable", p.Detail)
	}
	e.do("GET", base+"/clusters?pageSize=5", nil).problem(http.StatusServiceUnavailable, "HYPERFLEET-SVC-001")
	// The writers keep hitting the outage: ten refusals each, on average.
	await.Eventually(t, 30*time.Second, "writers refused during the outage", func() (bool, string) {
		n := load.responses(http.StatusServiceUnavailable)
		return n >= 40, fmt.Sprintf("%d 503 responses, want 40", n)
	})

	pg.Start()
	await.Eventually(t, 30*time.Second, "/readyz recovered after PostgreSQL started again", func() (bool, string) {
		code, body := e.get("/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	load.waitAccepted(t, crashedAt+20)
	clusters, reports, codes := load.stop()
	t.Logf("responses under load: %v; %d clusters and %d status reports acknowledged", codes, len(clusters), len(reports))

	for code, n := range codes {
		if code != http.StatusCreated && code != http.StatusServiceUnavailable {
			t.Errorf("%d responses with HTTP %d: only 201 and 503 are acceptable", n, code)
		}
	}
	if codes[http.StatusServiceUnavailable] == 0 {
		t.Error("no request saw the outage: the crash happened outside the load")
	}
	if load.badProblems.Load() > 0 || load.firstBad.Load() != "" {
		t.Errorf("%d error responses were not problem+json with a code; first unexpected error: %s", load.badProblems.Load(), load.firstBad.Load())
	}

	// Nothing acknowledged is lost.
	for _, id := range clusters {
		if code, _ := e.get(base + "/clusters/" + id); code != http.StatusOK {
			t.Errorf("cluster %s was acknowledged with 201 but GET answers %d", id, code)
		}
	}
	for _, id := range reports {
		sts := e.statuses(resource.Resource{Href: base + "/clusters/" + id})
		if len(sts) != 1 || sts[0].Adapter != "validation" || sts[0].ObservedGeneration != 1 {
			t.Errorf("the status report for %s was acknowledged with 201 but the statuses are %+v", id, sts)
		}
	}
	entries, err := e.app.Store.PendingOutbox(context.Background(), 100000)
	if err != nil {
		t.Fatal(err)
	}
	outboxed := map[string]bool{}
	for _, en := range entries {
		if en.Reason == "created" {
			outboxed[en.ResourceID] = true
		}
	}
	for _, id := range clusters {
		if !outboxed[id] {
			t.Errorf("cluster %s was acknowledged but its outbox row (the hand-off to Temporal) is missing", id)
		}
	}
}

// writeLoad creates clusters and reports a status on each from several
// goroutines, remembering what the API acknowledged.
type writeLoad struct {
	e           *env
	stopCh      chan struct{}
	wg          sync.WaitGroup
	mu          sync.Mutex
	clusters    []string
	reports     []string
	codes       map[int]int
	badProblems atomic.Int64
	firstBad    atomic.Value
}

func startWriteLoad(e *env, writers int) *writeLoad {
	l := &writeLoad{e: e, stopCh: make(chan struct{}), codes: map[int]int{}}
	l.firstBad.Store("")
	client := &http.Client{Timeout: 20 * time.Second}
	for w := 0; w < writers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stopCh:
					return
				default:
				}
				code, raw := l.send(client, "POST", base+"/clusters", clusterBody(fmt.Sprintf("load-%d-%d", w, i)))
				if code != http.StatusCreated {
					// A client's back-off, not a wait in the test: the
					// writers must not spin while the database is down.
					time.Sleep(50 * time.Millisecond)
					continue
				}
				var c resource.Resource
				_ = json.Unmarshal(raw, &c)
				l.mu.Lock()
				l.clusters = append(l.clusters, c.ID)
				l.mu.Unlock()
				if code, _ := l.send(client, "PUT", base+"/clusters/"+c.ID+"/statuses", report("validation", 1, "True")); code == http.StatusCreated {
					l.mu.Lock()
					l.reports = append(l.reports, c.ID)
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// send does one request; a transport error counts as code 0.
func (l *writeLoad) send(client *http.Client, method, path string, body any) (int, []byte) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, l.e.url+path, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	code := 0
	var out []byte
	if err == nil {
		code = resp.StatusCode
		out, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if code >= 500 && code != http.StatusServiceUnavailable {
			l.firstBad.CompareAndSwap("", fmt.Sprintf("%d %s", code, out))
		}
		if code >= 400 {
			var p problemDoc
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") || json.Unmarshal(out, &p) != nil || p.Code == "" {
				l.badProblems.Add(1)
				l.firstBad.CompareAndSwap("", fmt.Sprintf("%d %s", code, out))
			}
		}
	}
	l.mu.Lock()
	l.codes[code]++
	l.mu.Unlock()
	return code, out
}

func (l *writeLoad) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clusters)
}

// responses counts the responses with HTTP code so far.
func (l *writeLoad) responses(code int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.codes[code]
}

func (l *writeLoad) waitAccepted(t *testing.T, n int) {
	t.Helper()
	await.Eventually(t, 60*time.Second, "creations acknowledged", func() (bool, string) {
		got := l.accepted()
		return got >= n, fmt.Sprintf("only %d of %d", got, n)
	}, func() string {
		_, _, codes := l.stop()
		return fmt.Sprintf("responses: %v", codes)
	})
}

func (l *writeLoad) stop() (clusters, reports []string, codes map[int]int) {
	select {
	case <-l.stopCh:
	default:
		close(l.stopCh)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	codes = map[int]int{}
	for k, v := range l.codes {
		codes[k] = v
	}
	sort.Strings(l.clusters)
	return l.clusters, l.reports, codes
}

// get is a GET outside the API's base path (/readyz) or inside it.
func (e *env) get(path string) (int, string) {
	e.t.Helper()
	r := e.do("GET", path, nil)
	return r.status, string(r.body)
}
