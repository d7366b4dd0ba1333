package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinaryEnv names a prebuilt hyperfleet binary (make test sets it so every
// test package shares one build).
const BinaryEnv = "HYPERFLEET_BINARY"

// RehearsalBinaryEnv names a prebuilt test build of hyperfleet (go build
// -tags rehearsal), which has `worker --upgrade-rehearsal`.
const RehearsalBinaryEnv = "HYPERFLEET_REHEARSAL_BINARY"

// binary is one build of cmd/hyperfleet, made at most once per test
// process.
type binary struct {
	env, tags string
	target    string // the make target that builds it
	once      sync.Once
	path, dir string
	err       error
}

var (
	plainBinary     = &binary{env: BinaryEnv, target: "build"}
	rehearsalBinary = &binary{env: RehearsalBinaryEnv, tags: "rehearsal", target: "build-rehearsal"}
)

// Binary returns the hyperfleet binary: $HYPERFLEET_BINARY, or one built
// into a temporary directory on first use and removed by StopAll.
func Binary(t testing.TB) string {
	t.Helper()
	return plainBinary.get(t)
}

// RehearsalBinary returns the test build of hyperfleet whose workers can
// host the rehearsal workflow (tests/rehearsal): $HYPERFLEET_REHEARSAL_BINARY,
// or one built with -tags rehearsal like Binary's.
func RehearsalBinary(t testing.TB) string {
	t.Helper()
	return rehearsalBinary.get(t)
}

func (b *binary) get(t testing.TB) string {
	t.Helper()
	b.once.Do(b.resolve)
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func (b *binary) resolve() {
	if p := os.Getenv(b.env); p != "" {
		if !filepath.IsAbs(p) {
			// Tests run in their package's directory: a relative path is
			// taken from the repository root, where make runs.
			if bin, err := BinDir(); err == nil {
				p = filepath.Join(filepath.Dir(bin), p)
			}
		}
		if _, err := os.Stat(p); err != nil {
			b.err = fmt.Errorf("%s=%s: %w (run 'make %s' or unset it)", b.env, p, err, b.target)
		}
		b.path = p
		return
	}
	dir, err := os.MkdirTemp("", "hyperfleet-bin-")
	if err != nil {
		b.err = err
		return
	}
	b.dir, b.path = dir, filepath.Join(dir, "hyperfleet")
	// A version, as make build gives one: without it the reconciler is
	// unversioned and the worker-versioning tests fail outside make.
	args := []string{"build", "-ldflags", "-X github.com/hyperfleet/hyperfleet/internal/version.Version=test-build", "-o", b.path}
	if b.tags != "" {
		args = append(args, "-tags", b.tags)
	}
	cmd := exec.Command("go", append(args, "github.com/hyperfleet/hyperfleet/cmd/hyperfleet")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

func removeBinary() {
	for _, b := range []*binary{plainBinary, rehearsalBinary} {
		if b.dir != "" {
			_ = os.RemoveAll(b.dir)
		}
	}
}
