// Package testenv starts the real parts tests run against: a throwaway
// PostgreSQL cluster, (later) a kube-apiserver and a Temporal server. A part
// that is missing fails the test with a message saying how to get it; nothing
// is skipped.
package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for the admin connection

	"github.com/hyperfleet/hyperfleet/internal/loopback"
	"github.com/hyperfleet/hyperfleet/internal/pgcluster"
)

// DatabaseURLEnv points tests at an existing PostgreSQL server instead of a
// throwaway one; each test still gets a database of its own.
const DatabaseURLEnv = "HYPERFLEET_TEST_DATABASE_URL"

// PostgresBinEnv names the directory holding initdb and postgres.
const PostgresBinEnv = "HYPERFLEET_PG_BIN"

var (
	pgOnce   sync.Once
	pgServer *postgresServer
	pgErr    error
	dbSeq    atomic.Int64
)

type postgresServer struct {
	adminURL string // connection string with the database name as %s
	cmd      *exec.Cmd
	exited   chan struct{}
	dir      string
	bin      string
	port     int
	cred     *syscall.Credential
	durable  bool // acknowledged commits survive a crash of the server
}

// PostgresDB returns the URL of a fresh, empty database. The server is
// started on first use (or taken from HYPERFLEET_TEST_DATABASE_URL) and the
// database is dropped when the test ends.
func PostgresDB(t testing.TB) string {
	t.Helper()
	url, drop, err := NewPostgresDatabase()
	if err != nil {
		t.Fatalf("PostgreSQL is needed for this test: %v", err)
	}
	t.Cleanup(drop)
	return url
}

// NewPostgresDatabase creates a fresh database on the shared throwaway
// server (starting it on first use) and returns its URL and a function that
// drops it. Benchmarks and tools use it outside of `go test`.
func NewPostgresDatabase() (string, func(), error) {
	pgOnce.Do(func() { pgServer, pgErr = startPostgres() })
	if pgErr != nil {
		return "", nil, pgErr
	}
	name := fmt.Sprintf("hf_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	admin, err := sql.Open("pgx", fmt.Sprintf(pgServer.adminURL, "postgres"))
	if err != nil {
		return "", nil, fmt.Errorf("connect to test PostgreSQL: %w", err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	drop := func() {
		admin, err := sql.Open("pgx", fmt.Sprintf(pgServer.adminURL, "postgres"))
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	}
	return fmt.Sprintf(pgServer.adminURL, name), drop, nil
}

// Main runs a test package and stops the servers it started.
func Main(m *testing.M) int {
	code := m.Run()
	if code != 0 {
		// The Maestro processes' logs live in a directory StopAll removes;
		// a failure in CI is only diagnosable from what is printed here.
		printMaestroLogs(os.Stderr, 60)
	}
	StopAll()
	return code
}

// StopAll stops every server this process started.
func StopAll() {
	stopMaestro() // first: it uses PostgreSQL and the kube-apiserver
	if pgServer != nil && pgServer.cmd != nil {
		pgServer.stop(syscall.SIGINT) // fast shutdown
		_ = os.RemoveAll(pgServer.dir)
	}
	stopKube()
	removeBinary()
}

func startPostgres() (*postgresServer, error) {
	if u := os.Getenv(DatabaseURLEnv); u != "" {
		return &postgresServer{adminURL: withDatabasePlaceholder(u)}, nil
	}
	return newPostgresCluster(false)
}

// newPostgresCluster initialises a throwaway cluster in a temp directory
// and starts it on a free loopback port.
func newPostgresCluster(durable bool) (*postgresServer, error) {
	bin, err := postgresBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hyperfleet-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := dropRoot(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %v\n%s", data, err, out)
	}
	port, err := loopback.Port()
	if err != nil {
		return nil, err
	}
	s := &postgresServer{
		adminURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%%s?sslmode=disable", port),
		dir:      dir, bin: bin, port: port, cred: cred, durable: durable,
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// start runs the postmaster on the cluster's data directory and port and
// waits until it accepts connections.
func (s *postgresServer) start() error {
	logFile, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// The shared server trades durability for speed; a private one is
	// crashed on purpose, so a commit must reach the WAL (the OS keeps it:
	// fsync stays off) before it is acknowledged.
	syncCommit := "synchronous_commit=off"
	if s.durable {
		syncCommit = "synchronous_commit=on"
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", syncCommit,
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=128MB")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, _ := sql.Open("pgx", fmt.Sprintf(s.adminURL, "postgres"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		db.Close()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
			return fmt.Errorf("postgres did not accept connections within 30s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop shuts the postmaster down with sig (SIGINT: fast, SIGQUIT:
// immediate, as a crash would) and waits for it to exit.
func (s *postgresServer) stop(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// PostgresServer is a throwaway PostgreSQL cluster of one test's own, which
// the test may stop and start again (fault tests); other tests share one.
type PostgresServer struct {
	t testing.TB
	s *postgresServer
}

// StartPostgres starts a private PostgreSQL cluster, removed when the test
// ends. HYPERFLEET_TEST_DATABASE_URL does not apply: the test controls
// this server's process.
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	s, err := newPostgresCluster(true)
	if err != nil {
		t.Fatalf("PostgreSQL is needed for this test: %v", err)
	}
	t.Cleanup(func() {
		s.stop(syscall.SIGINT)
		_ = os.RemoveAll(s.dir)
	})
	return &PostgresServer{t: t, s: s}
}

// URL is the connection string of the server's "postgres" database.
func (p *PostgresServer) URL() string { return fmt.Sprintf(p.s.adminURL, "postgres") }

// Crash stops the server the way a crash does (immediate shutdown: no
// checkpoint, open connections cut); Start recovers from the WAL.
func (p *PostgresServer) Crash() { p.s.stop(syscall.SIGQUIT) }

// Start starts the server again on the same port and data.
func (p *PostgresServer) Start() {
	p.t.Helper()
	if err := p.s.start(); err != nil {
		p.t.Fatal(err)
	}
}

// withDatabasePlaceholder swaps the database name of a URL for %s.
func withDatabasePlaceholder(u string) string {
	u = strings.ReplaceAll(u, "%", "%%")
	scheme := strings.Index(u, "://")
	slash := strings.Index(u[scheme+3:], "/")
	if scheme < 0 || slash < 0 {
		return u + "/%s"
	}
	slash += scheme + 3
	end := strings.IndexByte(u[slash:], '?')
	if end < 0 {
		return u[:slash] + "/%s"
	}
	return u[:slash] + "/%s" + u[slash+end:]
}

func postgresBinDir() (string, error) {
	return pgcluster.BinDir(os.Getenv(PostgresBinEnv), "set "+PostgresBinEnv+" to their directory, "+
		"or set "+DatabaseURLEnv+" to a server the tests may create databases on")
}

// dropRoot returns the credentials to run PostgreSQL with: it refuses to run
// as root, so as root the cluster belongs to the "postgres" user.
func dropRoot(dir string) (*syscall.Credential, error) {
	cred, _, err := pgcluster.Owner(dir)
	return cred, err
}

// FreePort is a loopback port nobody listens on at the moment of asking,
// reserved for this test process (see loopback.Port).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := loopback.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
