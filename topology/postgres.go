package topology

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/hyperfleet/hyperfleet/internal/pgcluster"
)

// postgresCluster is a PostgreSQL cluster in a folder of the state
// directory: created with initdb the first time, started by the
// supervisor as the process named name.
type postgresCluster struct {
	name string
	dir  string // holds data/ and the socket
	port int
	bin  string
	cred *syscall.Credential
	// osUser is the account it runs as, when not the supervisor's.
	osUser string
	// password is the postgres role's, generated with the cluster and
	// kept in passwordFile (0600): every connection, local socket or
	// TCP, authenticates with it (scram-sha-256).
	password string
}

// passwordFile is where a cluster's password is kept, beside its data.
func (c *postgresCluster) passwordFile() string { return filepath.Join(c.dir, "password") }

// PostgresBinDir finds initdb and postgres: dir when given, else the
// newest /usr/lib/postgresql/*/bin, else $PATH.
func PostgresBinDir(dir string) (string, error) {
	return pgcluster.BinDir(dir, "name their directory with --postgres-bin")
}

// newPostgresCluster prepares the cluster's folder, running initdb when it
// holds no cluster yet.
func newPostgresCluster(name, dir, bin string, port int) (*postgresCluster, error) {
	c := &postgresCluster{name: name, dir: dir, port: port, bin: bin}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if c.cred, c.osUser, err = pgcluster.Owner(dir); err != nil {
		return nil, err
	}
	if c.password, err = pgcluster.Password(c.passwordFile(), c.cred); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return c, nil
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=scram-sha-256",
		"--pwfile="+c.passwordFile(), "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %v\n%s", data, err, out)
	}
	return c, nil
}

// secure makes a cluster that an older release created with trust
// authentication (any local process could connect as postgres) require
// the password: it sets the role's password, switches pg_hba.conf to
// scram-sha-256 and reloads. Idempotent, and a no-op for a cluster
// created with a password, so every start runs it.
func (c *postgresCluster) secure(ctx context.Context) error {
	hba := filepath.Join(c.dir, "data", "pg_hba.conf")
	raw, err := os.ReadFile(hba)
	if err != nil {
		return fmt.Errorf("%s: read %s: %w", c.name, hba, err)
	}
	rewritten, changed := pgcluster.RequirePassword(string(raw))
	if !changed {
		return nil
	}
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	// The password is hex from crypto/rand (pgcluster.Password): nothing
	// in it needs quoting. ALTER ROLE takes no bind parameters.
	if _, err := db.ExecContext(ctx, "ALTER ROLE postgres PASSWORD '"+c.password+"'"); err != nil {
		return fmt.Errorf("%s: set the postgres role's password: %w", c.name, err)
	}
	if err := os.WriteFile(hba, []byte(rewritten), 0o600); err != nil {
		return fmt.Errorf("%s: write %s: %w", c.name, hba, err)
	}
	if _, err := db.ExecContext(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("%s: reload after requiring passwords: %w", c.name, err)
	}
	return nil
}

// process is how the supervisor runs the cluster. Durable as a production
// server: fsync on, every commit flushed before it is acknowledged (the
// fault tests restart it and count on every acknowledged write).
func (c *postgresCluster) process(stateDir string) *Process {
	return &Process{
		Name: c.name,
		Argv: []string{filepath.Join(c.bin, "postgres"), "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(c.port), "-k", c.dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=400", "-c", "shared_buffers=256MB"},
		Dir: c.dir, Env: environ(), User: c.osUser, cred: c.cred,
		Log: logPath(stateDir, c.name), Ready: fmt.Sprintf("127.0.0.1:%d", c.port),
		StopSignal: syscall.SIGINT, // fast shutdown: no wait for clients
	}
}

// url is the connection string of one database of the cluster, with
// its password: for the processes that connect, never for a log.
func (c *postgresCluster) url(database string) string {
	return (&url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.password),
		Host: fmt.Sprintf("127.0.0.1:%d", c.port), Path: "/" + database, RawQuery: "sslmode=disable"}).String()
}

// logURL is url without the password.
func (c *postgresCluster) logURL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s", c.port, database)
}

// createDatabases creates the databases that do not exist yet.
func (c *postgresCluster) createDatabases(ctx context.Context, names ...string) error {
	db, err := sql.Open("pgx", c.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, name := range names {
		var exists bool
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
			return fmt.Errorf("%s: look up database %s: %w", c.name, name, err)
		}
		if exists {
			continue
		}
		// Names are ours (fixed identifiers), never input.
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+pqIdent(name)); err != nil {
			return fmt.Errorf("%s: create database %s: %w", c.name, name, err)
		}
	}
	return nil
}

func pqIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// ping runs a query on the database at url.
func ping(ctx context.Context, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

func (t *Topology) startPostgres(ctx context.Context) error {
	cfg := t.cfg
	p := cfg.PostgresPort
	if p == 0 {
		p = 5433
	}
	var err error
	if t.pg, err = newPostgresCluster("postgres", filepath.Join(cfg.StateDir, "postgres"), cfg.PostgresBin, p); err != nil {
		return err
	}
	if err := t.launch(ctx, t.add(t.pg.process(cfg.StateDir))); err != nil {
		return err
	}
	t.pgTemporal = t.pg
	if cfg.SeparateTemporalDatabase {
		tp, err := port(cfg.TemporalPostgresPort)
		if err != nil {
			return err
		}
		if t.pgTemporal, err = newPostgresCluster("postgres-temporal", filepath.Join(cfg.StateDir, "postgres-temporal"), cfg.PostgresBin, tp); err != nil {
			return err
		}
		if err := t.launch(ctx, t.add(t.pgTemporal.process(cfg.StateDir))); err != nil {
			return err
		}
	}
	if err := t.waitDatabase(ctx, t.pg); err != nil {
		return err
	}
	if err := t.pg.secure(ctx); err != nil {
		return err
	}
	if err := t.pg.createDatabases(ctx, "hyperfleet"); err != nil {
		return err
	}
	if err := t.waitDatabase(ctx, t.pgTemporal); err != nil {
		return err
	}
	if err := t.pgTemporal.secure(ctx); err != nil {
		return err
	}
	return t.pgTemporal.createDatabases(ctx, "temporal", "temporal_visibility")
}

// waitDatabase waits until the cluster accepts queries (it listens a
// moment before it has recovered).
func (t *Topology) waitDatabase(ctx context.Context, c *postgresCluster) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(ctx, c.url("postgres"))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not accept queries: %w", c.name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// DatabaseURL is HyperFleet's database, with its password.
func (t *Topology) DatabaseURL() string { return t.pg.url("hyperfleet") }

// DatabaseAddress is HyperFleet's database without the password, for
// people and logs; DatabasePasswordFile holds the password.
func (t *Topology) DatabaseAddress() string { return t.pg.logURL("hyperfleet") }

// DatabasePasswordFile is the file that holds the database's password.
func (t *Topology) DatabasePasswordFile() string { return t.pg.passwordFile() }
