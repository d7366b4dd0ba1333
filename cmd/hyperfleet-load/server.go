package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

// server is a started `hyperfleet serve`.
type server struct {
	url   string
	pprof string
	cmd   *exec.Cmd
	stop  func()
}

// cpuProfile records the server's CPU profile for d into file.
func (s *server) cpuProfile(d time.Duration, file string) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, int(d.Seconds())))
	if err != nil {
		return fmt.Errorf("profile the server: %w", err)
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return fmt.Errorf("profile the server: %w", err)
	}
	return out.Close()
}

// rss reads the server's resident set now and at its peak from /proc.
func (s *server) rss() string {
	fields, err := s.status()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return fmt.Sprintf("%s (peak %s)", fields["VmRSS"], fields["VmHWM"])
}

// status reads the server's /proc status fields ("VmRSS": "1234 kB").
func (s *server) status() (map[string]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields, nil
}

// cpuSeconds is the server's user and system CPU so far, from
// /proc/<pid>/stat (0 without a started server).
func (s *server) cpuSeconds() float64 {
	if s == nil {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing one (utime and stime are fields 14 and 15).
	rest := string(raw)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// startServer runs the real binary against a throwaway PostgreSQL database
// or a temporary SQLite file.
func startServer(binary, db string, profile, tenancy, watch bool) (*server, error) {
	var env []string
	var drop func()
	switch db {
	case "postgres":
		dbURL, dropDB, err := testenv.NewPostgresDatabase()
		if err != nil {
			return nil, err
		}
		env = []string{"HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL=" + dbURL, "HYPERFLEET_DB_MAX_OPEN_CONNS=32"}
		drop = func() { dropDB(); testenv.StopAll() }
	case "sqlite":
		dir, err := os.MkdirTemp("", "hyperfleet-load-")
		if err != nil {
			return nil, err
		}
		env = []string{"HYPERFLEET_DB_DRIVER=sqlite", "HYPERFLEET_DB_URL=" + dir + "/hyperfleet.db"}
		drop = func() { os.RemoveAll(dir) }
	default:
		return nil, fmt.Errorf("--db %q: use postgres or sqlite", db)
	}
	if tenancy {
		dir, err := os.MkdirTemp("", "hyperfleet-load-tenancy-")
		if err != nil {
			drop()
			return nil, err
		}
		file, err := writeTenancyFile(dir)
		if err != nil {
			drop()
			return nil, err
		}
		env = append(env, "HYPERFLEET_TENANCY_FILE="+file)
		dropDB := drop
		drop = func() { dropDB(); os.RemoveAll(dir) }
	}
	// Always said, so a run means the same on binaries from before and
	// after watches became the default.
	env = append(env, "HYPERFLEET_WATCH="+strconv.FormatBool(watch))
	addr, err := freeAddr()
	if err != nil {
		drop()
		return nil, err
	}
	pprofAddr := ""
	if profile {
		if pprofAddr, err = freeAddr(); err != nil {
			drop()
			return nil, err
		}
		env = append(env, "HYPERFLEET_PPROF_LISTEN="+pprofAddr)
	}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(append(os.Environ(), env...),
		"HYPERFLEET_LISTEN="+addr,
		`HYPERFLEET_CLUSTER_ADAPTERS=["validation","landing-zone"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=[]",
		"HYPERFLEET_LOG_LEVEL=warn", "HYPERFLEET_LOG_FORMAT=json")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		drop()
		return nil, fmt.Errorf("start %s (run make build first): %w", binary, err)
	}
	s := &server{url: "http://" + addr, pprof: pprofAddr, cmd: cmd, stop: func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_, _ = cmd.Process.Wait()
		drop()
	}}
	if err := waitReady(s.url + "/readyz"); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", binary, err)
	}
	return s, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitReady(u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 30s", u)
}
