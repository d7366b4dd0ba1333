//go:build integration

// Processes of the hyperfleet binary started by the tests.

package reconcile

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

// process is a hyperfleet binary started by a test, with its output kept
// for the test log on failure.
type process struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	log     syncBuffer
	exited  chan struct{}
	exitErr error
}

// startProcess runs the binary with args; env adds to the environment
// (HYPERFLEET_* of the developer's shell and KUBECONFIG are dropped). It is
// stopped when the test ends.
func startProcess(t *testing.T, name string, args []string, env ...string) *process {
	t.Helper()
	p := launchProcess(t, name, args, env...)
	t.Cleanup(p.stop)
	return p
}

// launchProcess is startProcess for a caller that stops the process
// itself (p.stop), at a point of its choosing among its cleanups.
func launchProcess(t *testing.T, name string, args []string, env ...string) *process {
	t.Helper()
	p := &process{t: t, name: name, exited: make(chan struct{})}
	p.cmd = exec.Command(testenv.Binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HYPERFLEET_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
	return p
}

// stop kills the process if it still runs, and puts its output in the
// test log when the test failed.
func (p *process) stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	if p.t.Failed() {
		p.t.Logf("%s output:\n%s", p.name, p.log.String())
	}
}

// failIfExited stops the test when the process died.
func (p *process) failIfExited() {
	p.t.Helper()
	select {
	case <-p.exited:
		p.t.Fatalf("%s exited: %v", p.name, p.exitErr)
	default:
	}
}

// interrupt is Ctrl-C: the process must stop cleanly and promptly.
func (p *process) interrupt() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.exitErr != nil {
			p.t.Errorf("%s exited with %v after Ctrl-C, want 0", p.name, p.exitErr)
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("%s did not stop within 60s of Ctrl-C", p.name)
	}
}

func httpGet(url string) (int, []byte) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// waitReadyz waits for a process's /readyz to answer 200.
func waitReadyz(t *testing.T, p *process, base string) {
	t.Helper()
	await.Eventually(t, 90*time.Second, "", func() (bool, string) {
		p.failIfExited()
		code, body := httpGet(base + "/readyz")
		return code == http.StatusOK, fmt.Sprintf("%s /readyz answered %d %s", p.name, code, body)
	}, nil)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
