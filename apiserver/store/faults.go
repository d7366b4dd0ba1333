package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Fault is what went wrong with the database itself, as opposed to the
// request: the API answers 503 for FaultUnavailable and 507 for
// FaultStorageFull instead of an opaque 500, so clients know to retry.
type Fault string

const (
	// FaultNone: the error is not a database fault (a bug, a constraint).
	FaultNone Fault = ""
	// FaultUnavailable: the database cannot be reached, is restarting or
	// shutting down, or is too busy to take the request.
	FaultUnavailable Fault = "unavailable"
	// FaultStorageFull: the database has no space left for the write.
	FaultStorageFull Fault = "storage-full"
)

// SQLite result codes (the low byte of extended codes) that are faults.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
)

// Classify tells a database fault from any other error.
func Classify(err error) Fault {
	if err == nil {
		return FaultNone
	}
	if errors.Is(err, syscall.ENOSPC) {
		return FaultStorageFull
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "53100": // disk_full
			return FaultStorageFull
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "53300",                                               // too_many_connections
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, starting up
			return FaultUnavailable
		}
		return FaultNone
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case sqliteFull:
			return FaultStorageFull
		case sqliteBusy, sqliteLocked, sqliteIOErr, sqliteCantOpen:
			return FaultUnavailable
		}
		return FaultNone
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return FaultUnavailable
	case pgconn.Timeout(err) && !errors.Is(err, context.Canceled):
		return FaultUnavailable
	}
	// Some drivers report these as plain errors.
	switch msg := err.Error(); {
	case strings.Contains(msg, "database or disk is full"):
		return FaultStorageFull
	case strings.Contains(msg, "conn closed"), strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"):
		return FaultUnavailable
	}
	return FaultNone
}
