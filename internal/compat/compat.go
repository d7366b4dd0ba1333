// Package compat locates upstream HyperFleet's adapters, payloads and
// schemas, which the compatibility tests run as shipped. They are not part
// of this repository: HYPERFLEET_COMPAT_DIR names their directory, and by
// default it is shared/compat in the directory that holds the checkout
// (where CI places it). Without them those tests skip, saying what they
// check, so a bare clone still passes `make test`; with CI=true a missing
// directory is a failure.
package compat

import (
	"os"
	"path/filepath"
	"testing"
)

// DirEnv names the directory of upstream's files when it is not the
// default.
const DirEnv = "HYPERFLEET_COMPAT_DIR"

// Path joins elems under the compat directory (call Require first).
func Path(elem ...string) string { return filepath.Join(append([]string{Dir()}, elem...)...) }

// Dir returns the absolute path of the compat directory, or "" when it is
// absent.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		abs, err := filepath.Abs(d)
		if st, serr := os.Stat(abs); err != nil || serr != nil || !st.IsDir() {
			return ""
		}
		return abs
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			compat := filepath.Join(filepath.Dir(dir), "shared", "compat")
			if st, err := os.Stat(compat); err == nil && st.IsDir() {
				return compat
			}
			return ""
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// Require skips the test when the upstream files are absent; checks says
// what the test verifies with them. With CI=true it fails instead.
func Require(t testing.TB, checks string) {
	t.Helper()
	if Dir() != "" {
		return
	}
	msg := "this test checks " + checks + " against upstream HyperFleet's files, expected in $" + DirEnv + " or shared/compat beside the checkout (upstream-adapter-examples, upstream-e2e-adapters, upstream-e2e-payloads)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; they are missing and CI=true")
	}
	t.Skip("skipping: " + msg + "; they are absent")
}
