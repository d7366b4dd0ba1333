// Package api holds black-box tests of the HyperFleet API over real HTTP,
// against real PostgreSQL and SQLite. Each scenario runs once per backend;
// without the integration tag, on SQLite only.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const base = "/api/hyperfleet/v1"

// env is one running API.
type env struct {
	t       *testing.T
	url     string
	app     *apiserver.App
	opts    apiserver.Options
	backend string
	token   string
}

type option func(*apiserver.Options)

func withAdapters(cluster, nodePool []string) option {
	return func(o *apiserver.Options) {
		o.Registered = map[string][]string{resource.KindCluster: cluster, resource.KindNodePool: nodePool}
	}
}

// storeConfig gives each backend a fresh database.
func storeConfig(t *testing.T, backend string) store.Config {
	if backend == store.BackendPostgres {
		return store.Config{Driver: store.BackendPostgres, URL: testenv.PostgresDB(t)}
	}
	return store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hyperfleet.db")}
}

func newEnv(t *testing.T, backend string, opts ...option) *env {
	t.Helper()
	o := apiserver.Options{
		Store:      storeConfig(t, backend),
		Registered: map[string][]string{resource.KindCluster: {"validation", "landing-zone"}, resource.KindNodePool: {"np-configmap"}},
		Logger:     zerolog.Nop(),
		Server:     apiserver.Config{Version: "test"},
		// Watches on, so every test here runs with the change log.
		Watch: watch.Config{Enabled: true},
	}
	if os.Getenv("HYPERFLEET_TEST_LOG") != "" {
		o.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	for _, fn := range opts {
		fn(&o)
	}
	return startEnv(t, backend, o)
}

func startEnv(t *testing.T, backend string, o apiserver.Options) *env {
	t.Helper()
	app, err := apiserver.Build(context.Background(), o)
	if err != nil {
		t.Fatalf("build API on %s: %v", backend, err)
	}
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(func() {
		srv.Close()
		app.Close()
	})
	return &env{t: t, url: srv.URL, app: app, opts: o, backend: backend}
}

// restart builds a new API on the same database with changed options.
func (e *env) restart(opts ...option) *env {
	e.t.Helper()
	o := e.opts
	for _, fn := range opts {
		fn(&o)
	}
	return startEnv(e.t, e.backend, o)
}

// testedBackends are the backends scenarios run on: SQLite always, and
// PostgreSQL in the integration tier, where the test servers run.
func testedBackends() []string {
	if testenv.Integration {
		return []string{store.BackendPostgres, store.BackendSQLite}
	}
	return []string{store.BackendSQLite}
}

// backends runs a scenario on each tested backend.
func backends(t *testing.T, fn func(t *testing.T, backend string)) {
	for _, b := range testedBackends() {
		t.Run(b, func(t *testing.T) { fn(t, b) })
	}
}

// eachBackend runs a scenario on a default API per backend.
func eachBackend(t *testing.T, fn func(t *testing.T, e *env), opts ...option) {
	backends(t, func(t *testing.T, b string) { fn(t, newEnv(t, b, opts...)) })
}

// response is a finished HTTP exchange.
type response struct {
	t      *testing.T
	method string
	path   string
	status int
	header http.Header
	body   []byte
}

func (e *env) do(method, path string, body any) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return &response{t: e.t, method: method, path: path, status: resp.StatusCode, header: resp.Header, body: raw}
}

// expect fails the test unless the status matches.
func (r *response) expect(status int) *response {
	r.t.Helper()
	if r.status != status {
		r.t.Fatalf("%s %s = %d, want %d: %s", r.method, r.path, r.status, status, r.body)
	}
	return r
}

func (r *response) into(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.t.Fatalf("%s %s: decode %s: %v", r.method, r.path, r.body, err)
	}
}

func (r *response) resource() resource.Resource {
	r.t.Helper()
	var out resource.Resource
	r.into(&out)
	return out
}

type problemDoc struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	Code      string `json:"code"`
	Timestamp string `json:"timestamp"`
	Errors    []struct {
		Field      string `json:"field"`
		Value      any    `json:"value"`
		Constraint string `json:"constraint"`
		Message    string `json:"message"`
	} `json:"errors"`
}

// problem asserts an RFC 9457 error with the given status and code and
// returns it.
func (r *response) problem(status int, code string) problemDoc {
	r.t.Helper()
	r.expect(status)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		r.t.Fatalf("%s %s: Content-Type %q, want application/problem+json", r.method, r.path, ct)
	}
	var p problemDoc
	r.into(&p)
	if p.Code != code || p.Status != status || p.Title == "" || p.Type == "" || p.Detail == "" || p.Timestamp == "" || p.Instance == "" {
		r.t.Fatalf("%s %s: problem %+v, want code %s status %d with every field set", r.method, r.path, p, code, status)
	}
	for _, leak := range []string{"SELECT", "sql:", "pq:", "goroutine", ".go:", "SQLSTATE"} {
		if strings.Contains(string(r.body), leak) {
			r.t.Fatalf("%s %s: problem leaks %q: %s", r.method, r.path, leak, r.body)
		}
	}
	return p
}

// fields lists the fields a problem names.
func (p problemDoc) fields() []string {
	var out []string
	for _, e := range p.Errors {
		out = append(out, e.Field)
	}
	return out
}

func (p problemDoc) names(field string) bool {
	for _, e := range p.Errors {
		if e.Field == field {
			return true
		}
	}
	return false
}

func clusterBody(name string) map[string]any {
	return map[string]any{"kind": "Cluster", "name": name, "spec": map[string]any{}, "labels": map[string]string{"environment": "production"}}
}

func nodePoolBody(name string) map[string]any {
	return map[string]any{"kind": "NodePool", "name": name, "spec": map[string]any{"replicas": 2}, "labels": map[string]string{"role": "worker"}}
}

func (e *env) createCluster(name string) resource.Resource {
	e.t.Helper()
	return e.do("POST", base+"/clusters", clusterBody(name)).expect(201).resource()
}

func (e *env) createNodePool(clusterID, name string) resource.Resource {
	e.t.Helper()
	return e.do("POST", base+"/clusters/"+clusterID+"/nodepools", nodePoolBody(name)).expect(201).resource()
}

func (e *env) getCluster(id string) resource.Resource {
	e.t.Helper()
	return e.do("GET", base+"/clusters/"+id, nil).expect(200).resource()
}

// report is a status report body; extra pairs add conditions.
func report(adapter string, gen int64, available string, extra ...string) map[string]any {
	conds := []map[string]string{
		{"type": "Available", "status": available, "reason": "R" + available, "message": adapter + " says " + available},
		{"type": "Applied", "status": "True"},
		{"type": "Health", "status": "True"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		conds = append(conds, map[string]string{"type": extra[i], "status": extra[i+1]})
	}
	return map[string]any{
		"adapter": adapter, "observed_generation": gen,
		"observed_time": time.Now().UTC().Format(time.RFC3339Nano), "conditions": conds,
	}
}

// statusPath is the statuses endpoint of a cluster or node pool.
func statusPath(r resource.Resource) string {
	return r.Href + "/statuses"
}

func (e *env) report(r resource.Resource, body map[string]any) *response {
	e.t.Helper()
	return e.do("PUT", statusPath(r), body)
}

// cond returns "Status/Reason/gen" of a condition for compact assertions.
func cond(r resource.Resource, typ string) string {
	c, ok := r.Condition(typ)
	if !ok {
		return "missing"
	}
	return fmt.Sprintf("%s/%s/%d", c.Status, c.Reason, c.ObservedGeneration)
}

func (e *env) expectCond(id, typ, want string) resource.Resource {
	e.t.Helper()
	r := e.getCluster(id)
	if got := cond(r, typ); got != want {
		e.t.Fatalf("cluster %s %s = %s, want %s", id, typ, got, want)
	}
	return r
}

func urlQuery(s string) string { return url.QueryEscape(s) }

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(raw)
}
