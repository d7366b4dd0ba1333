package api

import (
	"database/sql"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

// makeDatabaseUnreachable stops the API's database from taking
// connections: on PostgreSQL the database refuses new ones and its open
// ones are ended (the driver's error then names the user, database, host
// and port); on SQLite the store's pool is closed.
func makeDatabaseUnreachable(t *testing.T, e *env) (name string) {
	t.Helper()
	if e.backend == store.BackendSQLite {
		if err := e.app.Store.SQLDB().Close(); err != nil {
			t.Fatal(err)
		}
		return filepath.Base(e.opts.Store.URL)
	}
	u, err := url.Parse(e.opts.Store.URL)
	if err != nil {
		t.Fatal(err)
	}
	name = strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true")
		admin.Close()
	})
	for _, q := range []string{
		"ALTER DATABASE " + name + " ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return name
}

// /readyz is open to anyone: with the database down it says
// "unavailable" and no more (it showed the driver's error: user, database,
// host and port); the cause goes to the log, once per change.
func TestReadyzHidesCauses(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		var logs syncBuffer
		e := newEnv(t, backend, func(o *apiserver.Options) { o.Logger = zerolog.New(&logs).Level(zerolog.InfoLevel) })
		e.do("GET", "/readyz", nil).expect(200)
		name := makeDatabaseUnreachable(t, e)
		probe := func() {
			t.Helper()
			var h health
			r := e.do("GET", "/readyz", nil).expect(503)
			r.into(&h)
			if h.Status != "unavailable" || h.Checks["database"] != "unavailable" {
				t.Fatalf("/readyz with the database down = %s", r.body)
			}
			for _, leak := range []string{name, "postgres", "127.0.0.1", "user=", "sql:", "failed"} {
				if strings.Contains(string(r.body), leak) {
					t.Errorf("/readyz shows %q: %s", leak, r.body)
				}
			}
		}
		// The pool's ended connections fail one by one ("bad connection")
		// before every probe sees the refused new one; how many there are
		// depends on the pool, so probe until three probes in a row log
		// nothing, then require each logged cause to differ from the last.
		const steady, limit = 3, 30
		quiet := 0
		for i := 0; quiet < steady; i++ {
			if i == limit {
				t.Fatalf("%d probes with the database down still log new causes:\n%s", limit, logs.String())
			}
			before := len(failingCauses(t, logs.String()))
			probe()
			if len(failingCauses(t, logs.String())) == before {
				quiet++
			} else {
				quiet = 0
			}
		}
		out := logs.String()
		causes := failingCauses(t, out)
		if len(causes) == 0 {
			t.Fatalf("the cause was never logged:\n%s", out)
		}
		for i := 1; i < len(causes); i++ {
			if causes[i] == causes[i-1] {
				t.Errorf("the same cause was logged twice in a row (%q); want it once per change:\n%s", causes[i], out)
			}
		}
		if backend == store.BackendPostgres && !strings.Contains(out, name) {
			t.Errorf("the log does not carry the driver's error:\n%s", out)
		}
	})
}

// failingCauses returns the errors of the database check's "readiness
// check failing" lines, in order.
func failingCauses(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "readiness check failing") {
			continue
		}
		var l struct {
			Check string `json:"check"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Check == "database" {
			out = append(out, l.Error)
		}
	}
	return out
}

type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}
