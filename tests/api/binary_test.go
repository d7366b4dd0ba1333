//go:build integration

package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

func freeAddr(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) }

type process struct {
	cmd *exec.Cmd
	out *bytes.Buffer
	mu  *sync.Mutex
}

func (p process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func start(t *testing.T, env []string, args ...string) process {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Env = append(cleanEnv(), env...)
	p := process{cmd: cmd, out: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stdout, cmd.Stderr = lockedWriter{p.mu, p.out}, lockedWriter{p.mu, p.out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return p
}

// cleanEnv drops HYPERFLEET_* settings of the developer's shell.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HYPERFLEET_") {
			out = append(out, kv)
		}
	}
	return out
}

func waitReady(t *testing.T, p process, addr string) {
	t.Helper()
	await.Eventually(t, 30*time.Second, "hyperfleet serve ready on "+addr, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}, p.output)
}

// The real binary: configuration from the environment, refusal to start
// without registered adapters, serving on SQLite and on PostgreSQL, and a
// graceful exit on SIGTERM.
func TestServeBinary(t *testing.T) {
	state := t.TempDir()
	t.Run("refuses to start without registered adapters", func(t *testing.T) {
		cmd := exec.Command(testenv.Binary(t), "serve", "--state-dir", state, "--listen", freeAddr(t))
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "HYPERFLEET_CLUSTER_ADAPTERS is not set") {
			t.Errorf("exit %v, output:\n%s", err, out)
		}
	})
	t.Run("bad environment names the variable", func(t *testing.T) {
		cmd := exec.Command(testenv.Binary(t), "serve", "--state-dir", state)
		cmd.Env = append(cleanEnv(), "HYPERFLEET_CLUSTER_ADAPTERS=[", "HYPERFLEET_NODEPOOL_ADAPTERS=[]")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "HYPERFLEET_CLUSTER_ADAPTERS") {
			t.Errorf("exit %v, output:\n%s", err, out)
		}
		cmd = exec.Command(testenv.Binary(t), "serve", "--state-dir", state)
		cmd.Env = append(cleanEnv(), "HYPERFLEET_CLUSTER_ADAPTERS=a", "HYPERFLEET_NODEPOOL_ADAPTERS=[]", "HYPERFLEET_BODY_LIMIT=lots")
		out, err = cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "HYPERFLEET_BODY_LIMIT") {
			t.Errorf("exit %v, output:\n%s", err, out)
		}
	})
	for _, backend := range testedBackends() {
		t.Run("serves on "+backend, func(t *testing.T) {
			addr := freeAddr(t)
			env := []string{
				"HYPERFLEET_LISTEN=" + addr, "HYPERFLEET_STATE_DIR=" + state,
				`HYPERFLEET_CLUSTER_ADAPTERS=["validation","landing-zone"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=np-configmap",
				"HYPERFLEET_LOG_FORMAT=json", "HYPERFLEET_DB_DRIVER=" + backend,
			}
			if backend == store.BackendPostgres {
				url := testenv.PostgresDB(t)
				migrate := exec.Command(testenv.Binary(t), "migrate", "--db-driver", "postgres", "--db-url", url)
				migrate.Env = cleanEnv()
				if out, err := migrate.CombinedOutput(); err != nil || !strings.Contains(string(out), "database is up to date") {
					t.Fatalf("migrate: %v\n%s", err, out)
				}
				env = append(env, "HYPERFLEET_DB_URL="+url, "HYPERFLEET_SKIP_MIGRATE=true")
			}
			p := start(t, env, "serve")
			waitReady(t, p, addr)
			resp, err := http.Post("http://"+addr+base+"/clusters", "application/json",
				strings.NewReader(`{"kind":"Cluster","name":"from-binary-`+backend+`","spec":{}}`))
			if err != nil || resp.StatusCode != 201 {
				t.Fatalf("create: %v %v\n%s", resp, err, p.output())
			}
			resp.Body.Close()
			// Watches are on by default (no HYPERFLEET_WATCH above): a
			// list carries the resource version a watch starts from.
			resp, err = http.Get("http://" + addr + base + "/clusters")
			if err != nil || resp.StatusCode != 200 || resp.Header.Get(apiserver.ResourceVersionHeader) == "" {
				t.Fatalf("list: %v %v: want 200 with %s (watches on by default)\n%s", resp, err, apiserver.ResourceVersionHeader, p.output())
			}
			resp.Body.Close()
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- p.cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("exit after SIGTERM: %v\n%s", err, p.output())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no exit after SIGTERM:\n%s", p.output())
			}
			out := p.output()
			for _, want := range []string{`"message":"starting HyperFleet API"`, `"message":"API stopped"`} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %s:\n%s", want, out)
				}
			}
		})
	}
}

// Issue 43: the binary refuses a gateway-style tenancy file without a
// usable system secret, naming the file, the field and the fix; with one,
// a bare system header is refused and the secret makes a system caller.
func TestServeBinaryGatewayTenancySecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	secret := write("secret", systemSecret+"\n")
	short := write("short", "short-secret\n")
	dims := "dimensions:\n  - {header: X-Tenant-Org, key: org, required: true}\n"
	env := func(tenancyFile string) []string {
		return []string{"HYPERFLEET_STATE_DIR=" + t.TempDir(), `HYPERFLEET_CLUSTER_ADAPTERS=["validation"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=[]",
			"HYPERFLEET_TENANCY_FILE=" + tenancyFile}
	}
	for _, c := range []struct {
		name, file string
		want       []string
	}{
		{"no system_secret_file", write("no-secret.yaml", "system_header: X-HyperFleet-System\n"+dims),
			[]string{"system_secret_file: is not set", "openssl rand"}},
		{"a short secret", write("short.yaml", "system_header: X-HyperFleet-System\nsystem_secret_file: "+short+"\n"+dims),
			[]string{"system_secret_file: " + short + " holds 12 characters", "openssl rand"}},
		{"a missing secret file", write("missing.yaml", "system_header: X-HyperFleet-System\nsystem_secret_file: "+filepath.Join(dir, "nope")+"\n"+dims),
			[]string{"system_secret_file: open " + filepath.Join(dir, "nope")}},
	} {
		t.Run("refuses "+c.name, func(t *testing.T) {
			// A binary that starts anyway is killed, not waited on forever.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, testenv.Binary(t), "serve", "--listen", freeAddr(t))
			cmd.Env = append(cleanEnv(), env(c.file)...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("started:\n%s", out)
			}
			for _, want := range append([]string{"tenancy file " + c.file + ": "}, c.want...) {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	t.Run("serves with a secret", func(t *testing.T) {
		addr := freeAddr(t)
		p := start(t, append(env(write("good.yaml", "system_header: X-HyperFleet-System\nsystem_secret_file: "+secret+"\n"+dims)), "HYPERFLEET_LISTEN="+addr), "serve")
		waitReady(t, p, addr)
		get := func(value string) int {
			req, err := http.NewRequest("GET", "http://"+addr+base+"/clusters", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-HyperFleet-System", value)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := get("true"); got != http.StatusUnauthorized {
			t.Errorf("a bare true: %d, want 401", got)
		}
		if got := get(systemSecret); got != http.StatusOK {
			t.Errorf("the secret: %d, want 200\n%s", got, p.output())
		}
		if strings.Contains(p.output(), systemSecret) {
			t.Errorf("the log shows the secret:\n%s", p.output())
		}
	})
}
