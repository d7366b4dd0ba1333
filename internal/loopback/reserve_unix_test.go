//go:build unix

package loopback

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// useLedger points this process at a ledger of the test's own.
func useLedger(path string) {
	mu.Lock()
	defer mu.Unlock()
	ledgerPath, ledger = path, nil
}

// TestMain makes the test binary, run with LOOPBACK_TEST_LEDGER set, the
// other process of TestPortReservedByAnotherProcessIsSkipped: it reserves a
// port, prints it and holds it until killed or until its parent goes away
// (stdin closes).
func TestMain(m *testing.M) {
	path := os.Getenv("LOOPBACK_TEST_LEDGER")
	if path == "" {
		os.Exit(m.Run())
	}
	useLedger(path)
	p, err := Port()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("port", p)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func TestPortReservedByAnotherProcessIsSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	useLedger(path)
	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), "LOOPBACK_TEST_LEDGER="+path)
	if _, err := holder.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	held := 0
	for lines := bufio.NewScanner(out); held == 0 && lines.Scan(); {
		if rest, ok := strings.CutPrefix(lines.Text(), "port "); ok {
			held, _ = strconv.Atoi(rest)
		}
	}
	if held == 0 {
		t.Fatal("the holder process printed no port")
	}

	// The held port has no listener: only the reservation keeps it out.
	mu.Lock()
	nextPort = held
	mu.Unlock()
	if got, err := Port(); err != nil || got == held {
		t.Fatalf("Port() = %d, %v while another process holds %d; want another port", got, err, held)
	}

	// The kernel drops a killed process's reservations.
	_ = holder.Process.Kill()
	_ = holder.Wait()
	mu.Lock()
	nextPort = held
	mu.Unlock()
	if got, err := Port(); err != nil || got != held {
		t.Fatalf("Port() = %d, %v after the holder of %d was killed; want %d", got, err, held, held)
	}
}
