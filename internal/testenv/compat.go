package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// CompatEnv names the directory of upstream HyperFleet's adapter configs
// and payloads; by default the `shared/compat` folder cloned beside the
// repository.
const CompatEnv = "HYPERFLEET_COMPAT_DIR"

// Compat returns a path inside the upstream compatibility fixtures. They
// are not part of this repository: without them the test is skipped with a
// message, except in CI (CI=true), where nothing may be skipped.
func Compat(t testing.TB, elem ...string) string {
	t.Helper()
	root := os.Getenv(CompatEnv)
	if root == "" {
		repo, err := repoRoot()
		if err != nil {
			t.Fatal(err)
		}
		root = filepath.Join(filepath.Dir(repo), "shared", "compat")
	}
	p := filepath.Join(append([]string{root}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		msg := "upstream HyperFleet fixtures not found at " + p + ": clone the shared folder beside the repository or set " + CompatEnv
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: this test must run)")
		}
		t.Skip(msg)
	}
	return p
}

// repoRoot is the directory holding this module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && len(b) > 0 && isThisModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found (no go.mod of github.com/hyperfleet/hyperfleet above the working directory)")
		}
		dir = parent
	}
}

func isThisModule(gomod []byte) bool {
	const first = "module github.com/hyperfleet/hyperfleet\n"
	return len(gomod) >= len(first) && string(gomod[:len(first)]) == first
}
