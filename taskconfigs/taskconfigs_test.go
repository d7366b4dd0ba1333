// The tests keep the shipped adapters valid and their dry-run traces
// (testdata/<scenario>/expected.txt) exactly as recorded. Regenerate after
// an intended change with
//
//	go test ./taskconfigs -update

package taskconfigs

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/dryrun"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
)

var update = flag.Bool("update", false, "rewrite expected.txt from the current traces")

// traceTime fixes now() so traces are reproducible.
var traceTime = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func adapters(t *testing.T) []string {
	dirs, _ := filepath.Glob("*/adapter-task-config.yaml")
	if len(dirs) < 4 {
		t.Fatalf("found %d shipped adapters, want at least 4", len(dirs))
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func TestShippedAdaptersAreValid(t *testing.T) {
	for _, dir := range adapters(t) {
		_, problems := taskconfig.Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), taskconfig.Options{})
		if len(problems) != 0 {
			t.Errorf("%s: %v", dir, problems)
		}
	}
}

func TestShippedAdapterTraces(t *testing.T) {
	for _, dir := range adapters(t) {
		b, problems := taskconfig.Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), taskconfig.Options{})
		if err := problems.Err(); err != nil {
			t.Fatal(err)
		}
		scenarios, _ := filepath.Glob(filepath.Join(dir, "testdata", "*", "event.json"))
		if len(scenarios) < 2 {
			t.Errorf("%s has %d dry-run scenarios; keep at least two (a normal run and a deletion)", dir, len(scenarios))
		}
		for _, ev := range scenarios {
			sdir := filepath.Dir(ev)
			t.Run(sdir, func(t *testing.T) {
				in := dryrun.Inputs{EventFile: ev, APIResponsesFile: filepath.Join(sdir, "api-responses.json"), Now: traceTime, Env: map[string]string{}}
				if _, err := os.Stat(filepath.Join(sdir, "discovery.json")); err == nil {
					in.DiscoveryFile = filepath.Join(sdir, "discovery.json")
				}
				rep, err := dryrun.Run(context.Background(), b, in)
				if err != nil {
					t.Fatal(err)
				}
				var text bytes.Buffer
				rep.WriteText(&text, true)
				var js bytes.Buffer
				if err := rep.WriteJSON(&js); err != nil {
					t.Fatal(err)
				}
				var doc map[string]any
				if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc["schema"] != dryrun.SchemaVersion {
					t.Errorf("JSON trace: %v %v", err, doc["schema"])
				}
				if len(rep.Unmocked) > 0 {
					t.Errorf("calls without a mock: %v", rep.Unmocked)
				}
				golden := filepath.Join(sdir, "expected.txt")
				if *update {
					if err := os.WriteFile(golden, text.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run: go test ./taskconfigs -update)", err)
				}
				if !bytes.Equal(want, text.Bytes()) {
					t.Errorf("trace differs from %s (if intended: go test ./taskconfigs -update)\n--- got ---\n%s", golden, text.String())
				}
			})
		}
	}
}

func TestExtractWritesEveryShippedAdapter(t *testing.T) {
	dir := t.TempDir()
	got, err := Extract(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"validation", "nodepool-validation", "landing-zone", "validation-job", "nodepool-config"} {
		d, ok := got[name]
		if !ok {
			t.Errorf("%s not extracted (got %v)", name, got)
			continue
		}
		if _, problems := taskconfig.Load(filepath.Join(d, "adapter-config.yaml"), filepath.Join(d, "adapter-task-config.yaml"), taskconfig.Options{}); len(problems) != 0 {
			t.Errorf("extracted %s does not load: %v", name, problems)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "validation-job", "job.yaml")); err != nil {
		t.Errorf("manifest ref not extracted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "validation", "testdata")); !os.IsNotExist(err) {
		t.Errorf("dry-run fixtures should not be extracted (stat: %v)", err)
	}
}
