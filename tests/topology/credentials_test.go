//go:build integration

package topology_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/pgcluster"
	"github.com/hyperfleet/hyperfleet/topology"
)

// Contract (operator guide, "Production shape"): run-ha's PostgreSQL
// clusters accept no connection without their generated password
// (scram-sha-256, kept 0600 beside each cluster's data), a cluster an
// older release created trusting every local connection is switched to
// the password at start, and Temporal's configuration files, which hold
// it, are readable by their owner only.
func TestRunHADatabasesRequireTheirPassword(t *testing.T) {
	var state string
	s := startShape(t, func(c *topology.Config) {
		state = c.StateDir
		// HyperFleet's cluster as an older release left it; Temporal's is
		// new, so both ways a cluster gets its password are covered.
		trustingCluster(t, filepath.Join(state, "postgres"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ name, url string }{
		{"postgres", s.tp.DatabaseURL()},
		{"postgres-temporal", s.tp.TemporalDatabaseURL()},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := pingDB(ctx, u.String()); err != nil {
			t.Errorf("%s with its password: %v", c.name, err)
		}
		u.User = url.User("postgres")
		if err := pingDB(ctx, u.String()); err == nil || !strings.Contains(err.Error(), "password") {
			t.Errorf("%s without a password: err = %v, want a refusal that asks for the password", c.name, err)
		}
		u.User = url.UserPassword("postgres", "not-the-password")
		if err := pingDB(ctx, u.String()); err == nil {
			t.Errorf("%s accepted a wrong password", c.name)
		}
		fi, err := os.Stat(filepath.Join(state, c.name, "password"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s password file mode %v, want 0600", c.name, fi.Mode().Perm())
		}
	}
	configs, err := filepath.Glob(filepath.Join(state, "config", "temporal-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withPassword := 0
	for _, f := range configs {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "password:") {
			continue
		}
		withPassword++
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s holds the database password: mode %v (%v), want 0600", f, fi.Mode().Perm(), err)
		}
	}
	if withPassword == 0 {
		t.Errorf("no Temporal configuration among %v names the database password: Temporal could not have connected", configs)
	}
}

func pingDB(ctx context.Context, dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// trustingCluster creates the cluster an older run-ha created in dir:
// initdb with --auth=trust and no password file.
func trustingCluster(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cred, _, err := pgcluster.Owner(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := pgcluster.BinDir("", "set PATH")
	if err != nil {
		t.Fatal(err)
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
	if cred != nil {
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb --auth=trust in %s: %v\n%s", dir, err, out)
	}
}
