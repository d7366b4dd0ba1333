package api

import (
	"database/sql"
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
		var h health
		logged := 0
		for i := range 4 {
			if i == 2 {
				// The first probes may see two errors (an ended connection,
				// then the refused new one): each is logged once.
				logged = strings.Count(logs.String(), "readiness check failing")
			}
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
		out := logs.String()
		if n := strings.Count(out, "readiness check failing"); logged == 0 || n != logged || !strings.Contains(out, `"check":"database"`) {
			t.Errorf("the cause was logged %d times by the first two probes and %d by four; want it logged, and not again for the same error:\n%s", logged, n, out)
		}
		if backend == store.BackendPostgres && !strings.Contains(out, name) {
			t.Errorf("the log does not carry the driver's error:\n%s", out)
		}
	})
}

type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}
