package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// BinaryEnv names a prebuilt hyperfleet binary (make test sets it so every
// test package shares one build).
const BinaryEnv = "HYPERFLEET_BINARY"

var (
	binaryOnce sync.Once
	binaryPath string
	binaryDir  string
	binaryErr  error
)

// Binary returns the hyperfleet binary: $HYPERFLEET_BINARY, or one built
// into a temporary directory on first use and removed by StopAll.
func Binary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		if p := os.Getenv(BinaryEnv); p != "" {
			if !filepath.IsAbs(p) {
				// Tests run in their package's directory: a relative path
				// is taken from the repository root, where make runs.
				if bin, err := BinDir(); err == nil {
					p = filepath.Join(filepath.Dir(bin), p)
				}
			}
			if _, err := os.Stat(p); err != nil {
				binaryErr = fmt.Errorf("%s=%s: %w (run 'make build' or unset it)", BinaryEnv, p, err)
			}
			binaryPath = p
			return
		}
		dir, err := os.MkdirTemp("", "hyperfleet-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryDir, binaryPath = dir, filepath.Join(dir, "hyperfleet")
		// A version, as make build gives one: without it the reconciler
		// is unversioned and the worker-versioning tests fail outside make.
		cmd := exec.Command("go", "build", "-ldflags", "-X github.com/hyperfleet/hyperfleet/internal/version.Version=test-build",
			"-o", binaryPath, "github.com/hyperfleet/hyperfleet/cmd/hyperfleet")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build ./cmd/hyperfleet: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

func removeBinary() {
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
}
