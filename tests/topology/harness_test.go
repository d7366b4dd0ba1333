//go:build integration

// Package topology_test runs HyperFleet in its production shape (package
// topology: PostgreSQL, Temporal's own server as four services, two API
// replicas, two workers, each its own process) and kills and restarts its
// parts under load, and rolls a new release of the reconciler out under
// live workflows.
package topology_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/topology"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const apiPath = "/api/hyperfleet/v1"

// shape is a running topology and what the tests read from it.
type shape struct {
	t  *testing.T
	tp *topology.Topology
	db *sql.DB
	tc client.Client
}

// startShape starts the production shape in a temporary state directory,
// HyperFleet's and Temporal's databases in PostgreSQL clusters of their
// own so each can be restarted alone.
func startShape(t *testing.T, mutate func(*topology.Config)) *shape {
	t.Helper()
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"temporal-server", "temporal-sql-tool"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			t.Fatalf("%s not found in %s: run `make test-tools` (builds Temporal's server and SQL tool from go.mod's version into bin/) or set %s", tool, bin, testenv.BinDirEnv)
		}
	}
	// Not t.TempDir(): its parent is private to root, and PostgreSQL runs
	// as the postgres user when the tests run as root.
	state, err := os.MkdirTemp("", "hyperfleet-ha-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(state) })
	cfg := topology.Config{
		StateDir: state, Hyperfleet: testenv.Binary(t),
		TemporalServer: filepath.Join(bin, "temporal-server"), TemporalSQLTool: filepath.Join(bin, "temporal-sql-tool"),
		SeparateTemporalDatabase: true, PostgresPort: testenv.FreePort(t), TemporalPort: testenv.FreePort(t),
		UIPort: -1, APIPorts: []int{testenv.FreePort(t), testenv.FreePort(t)}, BalancerPort: testenv.FreePort(t),
		AdapterDirs:     []string{shipped("validation"), shipped("nodepool-validation")},
		ClusterAdapters: []string{"validation"}, NodePoolAdapters: []string{"nodepool-validation"},
		// A relay sweep of 5 s instead of a minute bounds how long rows a
		// dead replica left wait for the other: the test measures the
		// hand-over, not the safety net's period.
		APIEnv:  []string{"HYPERFLEET_RELAY_SWEEP=5s"},
		BuildID: "release-a",
		Logger:  zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	tp, err := topology.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start the production shape: %v", err)
	}
	t.Logf("production shape up in %s (state %s)", time.Since(start).Round(time.Millisecond), state)
	s := &shape{t: t, tp: tp}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range tp.Processes() {
				t.Logf("--- last lines of %s (%s):\n%s", p.Name, p.Log, p.Tail(25))
			}
		}
		tp.Stop()
	})
	if s.db, err = sql.Open("pgx", tp.DatabaseURL()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.db.Close() })
	if s.tc, err = tp.Dial(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.tc.Close)
	return s
}

func shipped(name string) string { return filepath.Join("..", "..", "taskconfigs", name) }

// httpClient is what the tests' clients use: short timeouts, so a dead
// replica answers with an error at once.
var httpClient = &http.Client{Timeout: 15 * time.Second}

// answer is one API response.
type answer struct {
	code  int
	body  []byte
	retry string
	err   error
}

func call(method, url, body string) answer {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: b, retry: resp.Header.Get("Retry-After")}
}

// burst creates n clusters through the given replicas in turn, c at a
// time, and patches every fourth one once it exists (a second
// generation). A request a replica could not take (it is down, or answers
// 503) moves to the next replica: what a client behind a load balancer
// sees. It records every 5xx each replica answered.
type burst struct {
	created  atomic.Int64
	mu       sync.Mutex
	ids      []string
	fivexx   map[string][]string // replica -> "METHOD code detail"
	refused  atomic.Int64
	finished chan struct{}
}

func startBurst(t *testing.T, replicas []string, n, concurrency int, name string) *burst {
	b := &burst{fivexx: map[string][]string{}, finished: make(chan struct{})}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				body := fmt.Sprintf(`{"kind":"Cluster","name":"%s-%d","spec":{"nodes":3},"labels":{"burst":%q}}`, name, i, name)
				id := b.send(t, replicas, int(i), http.MethodPost, "/clusters", body, http.StatusCreated)
				if id == "" {
					continue
				}
				b.created.Add(1)
				b.mu.Lock()
				b.ids = append(b.ids, id)
				b.mu.Unlock()
				if i%4 == 0 {
					b.send(t, replicas, int(i), http.MethodPatch, "/clusters/"+id, `{"spec":{"nodes":5}}`, http.StatusOK)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(b.finished) }()
	return b
}

// send tries the replicas from the i-th on until one takes the request,
// for up to two minutes; it returns the id of what it created or patched.
func (b *burst) send(t *testing.T, replicas []string, i int, method, path, body string, want int) string {
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		base := replicas[(i+attempt)%len(replicas)]
		a := call(method, base+apiPath+path, body)
		switch {
		case a.err != nil:
			b.refused.Add(1)
		case a.code == want:
			var r resource.Resource
			_ = json.Unmarshal(a.body, &r)
			return r.ID
		case a.code >= 500:
			b.mu.Lock()
			b.fivexx[base] = append(b.fivexx[base], fmt.Sprintf("%s %s: %d %s (Retry-After %q)", method, path, a.code, bytes.TrimSpace(a.body), a.retry))
			b.mu.Unlock()
		case a.code == http.StatusConflict && method == http.MethodPost:
			// The name exists: an earlier attempt was committed but its
			// answer lost with the replica. Nothing to redo.
			return ""
		default:
			t.Errorf("%s %s on %s: HTTP %d %s", method, path, base, a.code, a.body)
			return ""
		}
		// A client's back-off between attempts, not a wait in the test.
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("%s %s: no replica took it within two minutes", method, path)
	return ""
}

func (b *burst) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-b.finished:
	case <-time.After(within):
		t.Fatalf("the burst did not finish within %s (%d created)", within, b.created.Load())
	}
}

// waitCreated waits until at least n clusters of the burst were answered.
func (b *burst) waitCreated(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	await.Eventually(t, within, "creates answered", func() (bool, string) {
		got := b.created.Load()
		return got >= n, fmt.Sprintf("only %d of %d", got, n)
	})
}

// waitAllReconciled waits until every cluster in HyperFleet's database is
// Reconciled at its latest generation and the outbox is empty, and
// returns when that first held.
func (s *shape) waitAllReconciled(within time.Duration) time.Time {
	s.t.Helper()
	await.Eventually(s.t, within, "every cluster Reconciled", s.allReconciled)
	return time.Now()
}

// allReconciled reads every cluster through the API (any replica that
// answers) and the outbox from the database.
func (s *shape) allReconciled() (bool, string) {
	var outbox int
	if err := s.db.QueryRow("SELECT count(*) FROM outbox").Scan(&outbox); err != nil {
		return false, "outbox: " + err.Error()
	}
	total, behind := 0, 0
	example := ""
	for page := 1; ; page++ {
		a := call(http.MethodGet, s.tp.BalancerURL()+apiPath+fmt.Sprintf("/clusters?pageSize=100&page=%d", page), "")
		if a.err != nil || a.code != http.StatusOK {
			return false, fmt.Sprintf("list clusters: %v %d %s", a.err, a.code, a.body)
		}
		var list struct {
			Items []resource.Resource `json:"items"`
			Total int                 `json:"total"`
		}
		if err := json.Unmarshal(a.body, &list); err != nil {
			return false, err.Error()
		}
		for _, c := range list.Items {
			total++
			rec, _ := c.Condition(resource.ConditionReconciled)
			if rec.Status != resource.StatusTrue || rec.ObservedGeneration != c.Generation {
				behind++
				if example == "" {
					example = fmt.Sprintf("%s generation %d Reconciled=%s@%d (%s)", c.ID, c.Generation, rec.Status, rec.ObservedGeneration, rec.Reason)
				}
			}
		}
		if len(list.Items) < 100 {
			break
		}
	}
	return behind == 0 && outbox == 0, fmt.Sprintf("%d of %d clusters not Reconciled at their generation (e.g. %s), %d outbox rows", behind, total, example, outbox)
}

// outboxRows counts the rows waiting for a hand-off to Temporal.
func (s *shape) outboxRows() int {
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM outbox").Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// entry is one process of processes.json.
type entry struct {
	Name string   `json:"name"`
	PID  int      `json:"pid"`
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// manifest reads processes.json by process name.
func (s *shape) manifest() map[string]entry {
	s.t.Helper()
	raw, err := os.ReadFile(s.tp.ManifestPath())
	if err != nil {
		s.t.Fatal(err)
	}
	var list []entry
	if err := json.Unmarshal(raw, &list); err != nil {
		s.t.Fatalf("processes.json: %v", err)
	}
	out := map[string]entry{}
	for _, p := range list {
		out[p.Name] = p
	}
	return out
}

func (s *shape) kill(name string) {
	s.t.Helper()
	p := s.tp.Process(name)
	if p == nil {
		s.t.Fatalf("no process %s", name)
	}
	if err := p.Kill(); err != nil {
		s.t.Fatalf("kill %s: %v", name, err)
	}
}

func (s *shape) restart(name string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.tp.Restart(ctx, name); err != nil {
		s.t.Fatalf("restart %s: %v", name, err)
	}
}
