package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a fresh directory and unmounts it
// when the test ends: a disk that really fills up (ENOSPC), for fault
// tests. Mounting needs root (CAP_SYS_ADMIN); without it the test fails
// saying so.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hyperfleet-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		_ = os.Remove(dir)
		t.Fatalf("this test fills a size-limited tmpfs and needs to mount one: %v: %s\n"+
			"Run the tests as root (or with CAP_SYS_ADMIN), as CI does.", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
		_ = os.Remove(dir)
	})
	return dir
}

// Fill writes a file in dir until the file system is full, and returns its
// path: removing it gives the space back.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		t.Fatalf("create filler in %s: %v", dir, err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // ENOSPC: full
		}
	}
	// Whatever is left is smaller than a chunk: take it in small writes.
	small := make([]byte, 512)
	for {
		if _, err := f.Write(small); err != nil {
			break
		}
	}
	return f.Name()
}
