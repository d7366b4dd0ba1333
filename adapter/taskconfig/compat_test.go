package taskconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/internal/compat"
)

// compatRoot holds upstream HyperFleet's adapters (internal/compat).
var compatRoot = compat.Dir()

// compatAdapters lists every adapter directory of the compat fixtures.
func compatAdapters(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, group := range []string{"upstream-adapter-examples", "upstream-e2e-adapters"} {
		entries, err := os.ReadDir(filepath.Join(compatRoot, group))
		if err != nil {
			t.Fatalf("compat fixtures missing (see internal/compat): %v", err)
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(compatRoot, group, e.Name(), "adapter-task-config.yaml")); err == nil {
				dirs = append(dirs, filepath.Join(compatRoot, group, e.Name()))
			}
		}
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d compat adapters", len(dirs))
	}
	return dirs
}

// Every upstream adapter loads and validates unchanged.
func TestCompatAdaptersValidate(t *testing.T) {
	compat.Require(t, "that every upstream adapter config loads and validates unchanged")
	for _, dir := range compatAdapters(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, problems := Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), Options{})
			for _, p := range problems {
				t.Log(p.String())
			}
			if err := problems.Err(); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
	// The dry-run task configs come without an adapter config.
	for _, f := range []string{"dryrun-kubernetes-delete-task-config.yaml", "dryrun-cel-showcase-task-config.yaml"} {
		t.Run(f, func(t *testing.T) {
			_, problems := Load("", filepath.Join(compatRoot, "upstream-adapter-examples", "adapter-dryrun", f), Options{})
			if err := problems.Err(); err != nil {
				t.Errorf("%v", err)
			}
			_ = strings.TrimSpace
		})
	}
}
