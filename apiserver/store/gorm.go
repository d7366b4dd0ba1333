package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver (shared with the embedded Temporal server)

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Backends.
const (
	BackendPostgres = "postgres"
	BackendSQLite   = "sqlite"
)

// Config selects and tunes a backend.
type Config struct {
	// Driver is "postgres" or "sqlite".
	Driver string
	// URL is a PostgreSQL connection string, or the path of the SQLite file.
	URL             string
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	// SlowQuery logs statements slower than this at warn level.
	SlowQuery time.Duration
	// ChangeLog writes every resource change to the change log that
	// watches read (changes.go). Off, no transaction writes it: on
	// PostgreSQL its numbering serialises the commits of every change.
	ChangeLog bool
	Logger    zerolog.Logger
	// Kinds builds each resource's href and owner reference; the default
	// kinds when nil.
	Kinds *resource.Kinds
}

type gormStore struct {
	db      *gorm.DB
	sqlDB   *sql.DB
	maxIdle int // the configured idle connections, restored after reopenConnections
	backend string
	log     zerolog.Logger
	qlog    *queryLogger
	stmts   *statements
	counts  countCache // totals of term-plan searches (terms.go)
	kinds   *resource.Kinds
	// maxSpecWalk is defaultMaxSpecWalk (terms.go); tests move it.
	maxSpecWalk int64
	// url is the database's, for the change log's own LISTEN connection;
	// changed is ChangeSignal's channel.
	url     string
	changed chan struct{}
	// changeLog: write the change log (Config.ChangeLog); seq numbers
	// its changes on PostgreSQL (sequencer.go).
	changeLog bool
	seq       sequencer
}

// Open connects to the configured backend and checks it answers. It does
// not migrate: call Migrate.
func Open(ctx context.Context, cfg Config) (Store, error) {
	qlog := &queryLogger{log: cfg.Logger, slow: cfg.SlowQuery}
	gcfg := &gorm.Config{
		SkipDefaultTransaction: true,
		Logger:                 qlog,
		NowFunc:                func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	}
	var (
		db  *gorm.DB
		err error
	)
	switch cfg.Driver {
	case BackendPostgres:
		if cfg.URL == "" {
			return nil, errors.New("store: the postgres driver needs a database URL (--db-url or HYPERFLEET_DB_URL)")
		}
		db, err = gorm.Open(postgres.Open(cfg.URL), gcfg)
	case BackendSQLite:
		if cfg.URL == "" {
			return nil, errors.New("store: the sqlite driver needs a file path (--db-url or HYPERFLEET_DB_URL)")
		}
		if dir := filepath.Dir(cfg.URL); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("store: create directory for %s: %w", cfg.URL, err)
			}
		}
		conn, oerr := sql.Open("sqlite", sqliteDSN(cfg.URL))
		if oerr != nil {
			return nil, fmt.Errorf("store: open sqlite %s: %w", cfg.URL, oerr)
		}
		db, err = gorm.Open(sqlite.Dialector{DriverName: "sqlite", Conn: conn}, gcfg)
	default:
		return nil, fmt.Errorf("store: unknown database driver %q; use postgres or sqlite", cfg.Driver)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", cfg.Driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	maxOpen := cfg.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 20
	}
	sqlDB.SetMaxOpenConns(maxOpen)
	maxIdle := maxOpen
	if cfg.MaxIdleConns > 0 {
		maxIdle = cfg.MaxIdleConns
	}
	sqlDB.SetMaxIdleConns(maxIdle)
	if cfg.ConnMaxLifetime > 0 {
		sqlDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	}
	kinds := cfg.Kinds
	if kinds == nil {
		kinds = resource.Defaults()
	}
	rebind := func(q string) string { return q }
	if cfg.Driver == BackendPostgres {
		rebind = postgresPlaceholders
	}
	s := &gormStore{db: db, sqlDB: sqlDB, maxIdle: maxIdle, backend: cfg.Driver, log: cfg.Logger, qlog: qlog, kinds: kinds,
		stmts: &statements{db: sqlDB, rebind: rebind}, maxSpecWalk: defaultMaxSpecWalk,
		url: cfg.URL, changed: make(chan struct{}, 1), changeLog: cfg.ChangeLog}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ping(pingCtx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", cfg.Driver, err)
	}
	return s, nil
}

// warmSQL touches what the busiest statements read: planning it loads
// both tables' and their indexes' catalog entries into a new PostgreSQL
// backend's caches.
const warmSQL = "SELECT 1 FROM resources JOIN adapter_statuses ON adapter_statuses.resource_id = resources.id WHERE resources.id = '' LIMIT 0"

// Warm opens the configured idle connections at once. A PostgreSQL
// connection costs a process start and its catalog caches; opened on
// demand, a burst after a restart (adapters reporting at 500 a second)
// waited hundreds of milliseconds for them. SQLite connections are cheap
// and stay lazy.
func (s *gormStore) Warm(ctx context.Context) error {
	if s.backend != BackendPostgres {
		return nil
	}
	// Every connection is held until all are open: more than the pool
	// may open would wait for each other forever.
	n := min(s.maxIdle, s.sqlDB.Stats().MaxOpenConnections)
	conns := make([]*sql.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.sqlDB.Conn(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = c
			_, errs[i] = c.ExecContext(ctx, warmSQL)
		}()
	}
	wg.Wait()
	for _, c := range conns {
		if c != nil {
			c.Close() // back to the pool, which keeps maxIdle of them
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: warm %d connections: %w", n, err)
	}
	return nil
}

// sqliteDSN turns a file path into a modernc DSN: WAL for concurrent
// readers, IMMEDIATE transactions so a read-modify-write never deadlocks on
// lock upgrade, foreign keys for cascades, case-sensitive LIKE like
// PostgreSQL, and one fixed time format so stored times compare as text.
func sqliteDSN(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)", "case_sensitive_like(1)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + path + "?" + q.Encode()
}

func (s *gormStore) Dialect() search.Dialect {
	if s.backend == BackendSQLite {
		return search.SQLite
	}
	return search.Postgres
}

func (s *gormStore) Backend() string { return s.backend }

func (s *gormStore) Ping(ctx context.Context) error { return s.sqlDB.PingContext(ctx) }

func (s *gormStore) SQLDB() *sql.DB { return s.sqlDB }

func (s *gormStore) Close() error {
	s.stopSequencer()
	s.stmts.close()
	return s.sqlDB.Close()
}

// InTx runs fn and then writes the changes it made to the change log.
// On PostgreSQL it returns once they are numbered (sequencer.go), so a
// watch reading after the call sees them.
func (s *gormStore) InTx(ctx context.Context, fn func(Tx) error) error {
	var t *gormTx
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		t = &gormTx{db: tx, backend: s.backend, kinds: s.kinds, stmts: s.stmts, qlog: s.qlog, changeLog: s.changeLog}
		if err := fn(t); err != nil {
			return err
		}
		return t.flushChanges(ctx)
	})
	if err != nil || t == nil {
		return err
	}
	for _, f := range t.committed {
		f()
	}
	if t.wroteChanges {
		if s.backend == BackendPostgres {
			s.awaitNumbered(ctx)
		} else {
			s.signalChange()
		}
	}
	return nil
}

type gormTx struct {
	db      *gorm.DB
	backend string
	kinds   *resource.Kinds
	stmts   *statements
	qlog    *queryLogger
	// committed runs once the transaction has committed (OnCommit).
	committed []func()
	// The change log's share of the transaction (changes.go): the state
	// of each resource read under its lock, and the changes to write.
	changeLog    bool
	locked       map[string]lockedState
	changes      []pendingChange
	changeAt     map[string]int
	wroteChanges bool
}

func (t *gormTx) OnCommit(fn func()) { t.committed = append(t.committed, fn) }
