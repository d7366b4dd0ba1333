package store

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// sqliteCoded stands in for modernc's *sqlite.Error, which only the
// driver can build: Classify reads nothing but its Code method.
type sqliteCoded int

func (c sqliteCoded) Error() string { return fmt.Sprintf("sqlite error %d", int(c)) }
func (c sqliteCoded) Code() int     { return int(c) }

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("create cluster: insert: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want Fault
	}{
		{"nil", nil, FaultNone},
		{"not found", ErrNotFound, FaultNone},
		{"unique violation", &pgconn.PgError{Code: "23505"}, FaultNone},
		{"syntax error", &pgconn.PgError{Code: "42601"}, FaultNone},
		{"postgres disk full", wrap(&pgconn.PgError{Code: "53100"}), FaultStorageFull},
		{"postgres admin shutdown", wrap(&pgconn.PgError{Code: "57P01"}), FaultUnavailable},
		{"postgres crash shutdown", &pgconn.PgError{Code: "57P02"}, FaultUnavailable},
		{"postgres starting up", &pgconn.PgError{Code: "57P03"}, FaultUnavailable},
		{"postgres connection failure", &pgconn.PgError{Code: "08006"}, FaultUnavailable},
		{"postgres too many connections", &pgconn.PgError{Code: "53300"}, FaultUnavailable},
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), FaultUnavailable},
		{"bad connection", wrap(driver.ErrBadConn), FaultUnavailable},
		{"unexpected EOF", wrap(io.ErrUnexpectedEOF), FaultUnavailable},
		{"pgx conn closed", errors.New("conn closed"), FaultUnavailable},
		{"ENOSPC", wrap(&os.PathError{Op: "write", Path: "/data/x", Err: syscall.ENOSPC}), FaultStorageFull},
		{"sqlite full", wrap(sqliteCoded(13)), FaultStorageFull},
		{"sqlite busy", wrap(sqliteCoded(5)), FaultUnavailable},
		{"sqlite ioerr write (extended)", wrap(sqliteCoded(10 | 3<<8)), FaultUnavailable},
		{"sqlite constraint", wrap(sqliteCoded(19)), FaultNone},
		{"sqlite full by message", errors.New("database or disk is full (13)"), FaultStorageFull},
		{"plain error", errors.New("json: cannot unmarshal"), FaultNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
