package topology

import (
	"context"
	"database/sql"
	"fmt"
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
}

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
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return c, nil
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %v\n%s", data, err, out)
	}
	return c, nil
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

// url is the connection string of one database of the cluster.
func (c *postgresCluster) url(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
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
