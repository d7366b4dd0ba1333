package topology

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one supervised process: what starts it again, and the
// running instance.
type Process struct {
	// Name is the process' role: api-1, worker-2, temporal-history,
	// postgres...
	Name string `json:"name"`
	// PID of the running instance (0: not running).
	PID int `json:"pid"`
	// Argv, Dir and Env start it again exactly as it was started; Env is
	// the whole environment. User is the account it runs as when it is not
	// the supervisor's (PostgreSQL refuses to run as root).
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
	User string   `json:"user,omitempty"`
	// Log is the file its standard output and error go to.
	Log string `json:"log"`
	// Ready is how to tell it serves: a URL answering 2xx, or host:port
	// accepting connections. Empty: started is ready.
	Ready string `json:"ready,omitempty"`
	// StopSignal ends it cleanly (default SIGTERM; PostgreSQL: SIGINT).
	StopSignal syscall.Signal `json:"-"`

	cred   *syscall.Credential
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// exitErr is how the last instance ended.
	exitErr error
}

// start runs a new instance.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running (pid %d)", p.Name, p.PID)
	}
	logFile, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.Name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s: starting %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(p.Argv, " "))
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Dir, cmd.Env = p.Dir, p.Env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so a signal meant for the supervisor's
	// terminal (Ctrl-C) reaches each process only through Stop, in order;
	// Pdeathsig ends it if the supervisor dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.PID, p.exited, p.exitErr = cmd, cmd.Process.Pid, make(chan struct{}), nil
	exited := p.exited
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		if p.cmd == cmd {
			p.cmd, p.PID = nil, 0
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Running reports whether an instance is running.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Exited is closed when the running instance ends (nil: none running).
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	return p.exited
}

// Signal sends sig to the instance and waits up to grace for it to end;
// then it kills the instance's whole process group.
func (p *Process) Signal(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	return fmt.Errorf("%s did not stop within %s after %s: killed", p.Name, grace, sig)
}

// Kill ends the instance at once (SIGKILL), as a crash or an OOM kill
// would, and waits for it.
func (p *Process) Kill() error { return p.Signal(syscall.SIGKILL, 10*time.Second) }

// Stop ends the instance cleanly (its stop signal), killing it after
// grace.
func (p *Process) Stop(grace time.Duration) error {
	sig := p.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	return p.Signal(sig, grace)
}

// Tail is the last n lines of the process' log (see Tail).
func (p *Process) Tail(n int) string { return Tail(p.Log, n) }

// Tail is the last n lines of a log file, each cut at 600 bytes
// (Temporal's lines carry whole stack traces), for error messages; empty
// when the file cannot be read.
func Tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 600 {
			lines[i] = l[:600] + " [...]"
		}
	}
	return strings.Join(lines, "\n")
}

// passedEnv are the supervisor's variables a process gets: where things
// are, locale and time zone, proxies and CA bundles, the Go runtime's
// knobs. Nothing else of the operator's environment (its secrets, its
// HYPERFLEET_* settings meant for one process) reaches every process, or
// processes.json.
var passedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "GOTRACEBACK", "GOCOVERDIR"}

// environ is the supervisor's passedEnv with the given variables set
// (later ones win).
func environ(set ...string) []string {
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return !slices.Contains(passedEnv, k)
	})
	out = append(out, set...)
	seen := map[string]int{}
	var dedup []string
	for _, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			dedup[i] = kv
			continue
		}
		seen[k] = len(dedup)
		dedup = append(dedup, kv)
	}
	return dedup
}

// logPath is where a process' log lives.
func logPath(stateDir, name string) string { return filepath.Join(stateDir, "logs", name+".log") }
