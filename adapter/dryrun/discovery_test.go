package dryrun

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/internal/compat"
)

var update = flag.Bool("update", false, "rewrite testdata/*/expected.txt from the current traces")

// A discovery that finds nothing after the apply fails the run, and the
// dry-run trace shows it as a live run reports it: the resources phase
// failed at the resource, Health=False with ExecutionFailed:resources and
// a message naming the resource and the discovery. The trace is a golden
// file (go test ./adapter/dryrun -update rewrites it).
func TestWrongDiscoveryGolden(t *testing.T) {
	dir := filepath.Join("testdata", "wrong-discovery")
	b, problems := taskconfig.Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), taskconfig.Options{})
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), b, Inputs{EventFile: filepath.Join(dir, "event.json"), APIResponsesFile: filepath.Join(dir, "api-responses.json"),
		Now: at, Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result != "FAILED" || ops(rep.State) != "clusterInfo=CREATE" {
		t.Errorf("result %s, operations %s", rep.Result, ops(rep.State))
	}
	health := condition(t, payload(t, rep.State, "statusPayload"), "Health")
	wantMsg := `Adapter failed at phase [resources] step [clusterInfo]: resource clusterInfo: ConfigMap "cluster-0198c0de-1a2b-7c3d-8e4f-5a6b7c8d9e0f-info" was created, ` +
		`but discovery.by_name "cluster-0198c0de-1a2b-7c3d-8e4f-5a6b7c8d9e0f-information": ConfigMap not found in namespace "default"`
	if health["status"] != "False" || health["reason"] != "ExecutionFailed:resources" || !strings.HasPrefix(health["message"].(string), wantMsg) {
		t.Errorf("Health = %v", health)
	}
	var text bytes.Buffer
	rep.WriteText(&text, true)
	golden := filepath.Join(dir, "expected.txt")
	if *update {
		if err := os.WriteFile(golden, text.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run: go test ./adapter/dryrun -update)", err)
	}
	if !bytes.Equal(want, text.Bytes()) {
		t.Errorf("trace differs from %s (if intended: go test ./adapter/dryrun -update)\n--- got ---\n%s", golden, text.String())
	}
}

// Upstream's cl-m-wrong-ds, unchanged: its ManifestWork is created, its
// discovery looks for another name, and the dry run reports what a live
// run reports.
func TestCompatWrongDiscoveryName(t *testing.T) {
	compat.Require(t, "that upstream's cl-m-wrong-ds fails at the resources phase in a dry run")
	dir := filepath.Join(compat.Path("upstream-e2e-adapters"), "cl-m-wrong-ds")
	b, problems := taskconfig.Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), taskconfig.Options{})
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	rep := run(t, b, apiResponses, "")
	if rep.Result != "FAILED" || ops(rep.State) != "resource0=CREATE" {
		t.Fatalf("result %s, operations %s", rep.Result, ops(rep.State))
	}
	p := payload(t, rep.State, "statusPayload")
	if got := conditions(p); got != "Applied=False Available=False Health=False" {
		t.Errorf("conditions = %s", got)
	}
	health := condition(t, p, "Health")
	msg, _ := health["message"].(string)
	if health["reason"] != "ExecutionFailed:resources" || !strings.HasPrefix(msg, "Adapter failed at phase [resources] step [resource0]: ") ||
		!strings.Contains(msg, `ManifestWork "abc123-cl-m-wrong-ds" was created, but discovery.by_name "abc123-cl-m-wrong-ds-wrong": ManifestWork not found on "cluster1"`) {
		t.Errorf("Health = %v", health)
	}
}

func condition(t *testing.T, p map[string]any, typ string) map[string]any {
	t.Helper()
	for _, c := range p["conditions"].([]any) {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	t.Fatalf("no %s condition in %v", typ, p["conditions"])
	return nil
}
