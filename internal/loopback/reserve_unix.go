//go:build unix

package loopback

import (
	"os"
	"path/filepath"
	"syscall"
)

// ledger is the machine-wide file whose byte N is write-locked by the
// process that reserved port N. Record locks belong to the process and the
// kernel drops them when it exits, however it exits: a killed process
// leaves nothing to clean up. The file stays open for the process's life,
// since closing any descriptor of it would drop every lock the process
// holds on it.
var ledger *os.File

// ledgerPath is a variable so a test can use a ledger of its own.
var ledgerPath = filepath.Join(os.TempDir(), "hyperfleet-loopback-ports")

// reserve takes port p for this process, and reports false when another
// process holds it. When the ledger cannot be opened (a temp dir that is
// not writable, a file another user created) it reserves nothing and says
// yes: ports are then only checked for a listener, as before.
func reserve(p int) bool {
	if ledger == nil {
		f, err := os.OpenFile(ledgerPath, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return true
		}
		ledger = f
	}
	lock := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(p), Len: 1}
	err := syscall.FcntlFlock(ledger.Fd(), syscall.F_SETLK, &lock)
	return err == nil || (err != syscall.EAGAIN && err != syscall.EACCES)
}
