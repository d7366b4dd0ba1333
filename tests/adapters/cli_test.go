//go:build integration

package adapters

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

func hyperfleet(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(testenv.Binary(t), args...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestAdapterValidateCommand(t *testing.T) {
	compat.Require(t, "hyperfleet adapter validate on every upstream adapter")
	lz := shipped + "/landing-zone"
	out, code := hyperfleet(t, "adapter", "validate", "--config", lz+"/adapter-config.yaml", "--task-config", lz+"/adapter-task-config.yaml")
	if code != 0 || !strings.Contains(out, "valid:") {
		t.Errorf("valid config: exit %d\n%s", code, out)
	}
	// Every upstream adapter validates unchanged.
	for _, dir := range []string{"cl-job", "np-configmap", "cl-maestro"} {
		if out, code := hyperfleet(t, "adapter", "validate", "--config", e2eAdapters+"/"+dir+"/adapter-config.yaml", "--task-config", e2eAdapters+"/"+dir+"/adapter-task-config.yaml"); code != 0 {
			t.Errorf("%s: exit %d\n%s", dir, code, out)
		}
	}
	// A broken config: every error, with file, line, path and fix; exit 1.
	bad := filepath.Join(t.TempDir(), "task.yaml")
	os.WriteFile(bad, []byte(`params:
  - name: clusterId
    source: event.id
preconditions:
  - name: check
    conditions:
      - field: clusterID
        operator: equal
        value: x
resources:
  - name: ns
    manifest:
      ref: /etc/adapter/ns.yaml
`), 0o644)
	out, code = hyperfleet(t, "adapter", "validate", "--task-config", bad)
	if code != 1 {
		t.Errorf("broken config: exit %d", code)
	}
	for _, want := range []string{
		bad + `:7: preconditions[0].conditions[0].field: "clusterID" is not a param or capture in scope here (did you mean "clusterId"?)`,
		bad + `:8: preconditions[0].conditions[0].operator: invalid operator "equal" (fix: did you mean "equals"?)`,
		bad + `:13: resources[0].manifest.ref: manifest.ref "/etc/adapter/ns.yaml" not found`,
		"3 error(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A ref mount mapped to another directory.
	refs := t.TempDir()
	os.WriteFile(filepath.Join(refs, "ns.yaml"), []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"{{ .clusterId }}\"\n  annotations: {hyperfleet.io/generation: \"1\"}\n"), 0o644)
	fixed := strings.NewReplacer("clusterID", "clusterId", "operator: equal", "operator: equals").Replace(readFile(t, bad))
	os.WriteFile(bad, []byte(fixed), 0o644)
	if out, code := hyperfleet(t, "adapter", "validate", "--task-config", bad, "--ref-dir", "/etc/adapter="+refs); code != 0 {
		t.Errorf("with --ref-dir: exit %d\n%s", code, out)
	}
	if out, code := hyperfleet(t, "adapter", "validate", "--task-config", bad, "--ref-dir", "nonsense"); code != 1 || !strings.Contains(out, "write MOUNT=DIR") {
		t.Errorf("bad --ref-dir: exit %d\n%s", code, out)
	}
}

func TestAdapterDryRunCommand(t *testing.T) {
	lz := shipped + "/landing-zone"
	args := []string{"adapter", "dry-run", "--config", lz + "/adapter-config.yaml", "--task-config", lz + "/adapter-task-config.yaml",
		"--dry-run-event", lz + "/testdata/delete/event.json", "--dry-run-api-responses", lz + "/testdata/delete/api-responses.json",
		"--dry-run-discovery", lz + "/testdata/delete/discovery.json", "--dry-run-time", "2026-11-22T10:00:00Z"}
	out, code := hyperfleet(t, args...)
	want := readFile(t, lz+"/testdata/delete/expected.txt")
	if code != 0 || !strings.HasPrefix(want, strings.SplitN(out, "Phase 1", 2)[0]) || !strings.Contains(out, "Result: SUCCESS") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	out, code = hyperfleet(t, append(args, "--dry-run-output", "json")...)
	var doc struct {
		Schema string `json:"schema"`
		Result string `json:"result"`
		Phases struct {
			Resources struct {
				Steps []struct{ Name, Operation string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.Schema != "hyperfleet.io/dry-run/v1" || doc.Result != "SUCCESS" || len(doc.Phases.Resources.Steps) != 2 {
		t.Errorf("json: exit %d, %v\n%s", code, err, out)
	}
	// A simulated run that fails exits 2.
	failing := filepath.Join(t.TempDir(), "api.json")
	os.WriteFile(failing, []byte(`{"responses":[{"match":{"method":"GET","urlPattern":"/clusters/"},"responses":[{"statusCode":500,"body":{}}]}]}`), 0o644)
	out, code = hyperfleet(t, "adapter", "dry-run", "--config", lz+"/adapter-config.yaml", "--task-config", lz+"/adapter-task-config.yaml",
		"--dry-run-event", lz+"/testdata/delete/event.json", "--dry-run-api-responses", failing)
	if code != 2 || !strings.Contains(out, "returned HTTP 500") || !strings.Contains(out, "Result: FAILED") {
		t.Errorf("failing run: exit %d\n%s", code, out)
	}
	if out, code := hyperfleet(t, "adapter", "dry-run", "--task-config", lz+"/adapter-task-config.yaml"); code != 1 || !strings.Contains(out, "--dry-run-event is required") {
		t.Errorf("no event: exit %d\n%s", code, out)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hyperfleet worker checks what it is asked to host before it connects to
// Temporal: bad input is a clear error and a non-zero exit, at once.
func TestWorkerRefusesBadInput(t *testing.T) {
	broken, brokenLine := t.TempDir(), 0
	for _, name := range []string{"adapter-config.yaml", "adapter-task-config.yaml"} {
		b, err := os.ReadFile(filepath.Join(shipped, "validation", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "adapter-task-config.yaml" {
			const expr = "cluster.?deleted_time.hasValue()"
			at := strings.Index(string(b), expr)
			if at < 0 {
				t.Fatalf("the shipped validation adapter no longer holds %q: update this test", expr)
			}
			brokenLine = strings.Count(string(b)[:at], "\n") + 1
			b = []byte(strings.Replace(string(b), expr, "cluster.?deleted_time.hasValue(", 1))
		}
		if err := os.WriteFile(filepath.Join(broken, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	// cl-maestro's adapter config without its "insecure: true": the plain
	// http:// API address is refused at load time.
	plainMaestro := filepath.Join(t.TempDir(), "adapter-config.yaml")
	if compat.Dir() != "" {
		cfg := strings.Replace(readFile(t, e2eAdapters+"/cl-maestro/adapter-config.yaml"), "insecure: true", "", 1)
		if err := os.WriteFile(plainMaestro, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"nothing to host", nil, []string{"nothing to host", "--reconciler"}},
		{"unpaired files", []string{"--config", "a.yaml"}, []string{"1 --config but 0 --task-config"}},
		{"directory without the files", []string{"--adapter-dir", empty}, []string{empty, "adapter-config.yaml"}},
		{"invalid task config", []string{"--adapter-dir", broken}, []string{fmt.Sprintf("%s:%d", filepath.Join(broken, "adapter-task-config.yaml"), brokenLine), "source.expression", "CEL does not compile"}},
		{"maestro over plain http without insecure", []string{"--api-base-url", "http://localhost:8000", "--config", plainMaestro, "--task-config", e2eAdapters + "/cl-maestro/adapter-task-config.yaml"},
			[]string{plainMaestro, "clients.maestro.http_server_address", "is plain http", "insecure: true"}},
	}
	if compat.Dir() == "" && os.Getenv("CI") != "true" {
		cases = cases[:len(cases)-1] // the maestro case uses an upstream adapter
		defer compat.Require(t, "that a worker refuses an upstream Maestro adapter")
	}
	for _, c := range cases {
		args := append([]string{"worker", "--temporal-address", "127.0.0.1:1", "--metrics-listen", ""}, c.args...)
		out, code := hyperfleet(t, args...)
		if code == 0 {
			t.Errorf("%s: exit 0, want an error\n%s", c.name, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output does not mention %q:\n%s", c.name, w, out)
			}
		}
	}
}
