package pgcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRequirePassword(t *testing.T) {
	tests := []struct {
		name, in, want string
		changed        bool
	}{
		{"local", "local all all trust", "local all all scram-sha-256", true},
		{"host with CIDR", "host all all 127.0.0.1/32 trust", "host all all 127.0.0.1/32 scram-sha-256", true},
		{"host with netmask", "host all all 127.0.0.1 255.255.255.255 trust", "host all all 127.0.0.1 255.255.255.255 scram-sha-256", true},
		{"a comment is kept", "host replication all ::1/128 trust # initdb's", "host replication all ::1/128 scram-sha-256 # initdb's", true},
		{"comments are not rules", "# local all all trust", "# local all all trust", false},
		{"other methods stay", "host all all 0.0.0.0/0 scram-sha-256\nlocal all all peer", "host all all 0.0.0.0/0 scram-sha-256\nlocal all all peer", false},
		{"a user named trust is not a method", "local all trust md5", "local all trust md5", false},
		{"blank and short lines", "\n\nlocal all\n", "\n\nlocal all\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := RequirePassword(tc.in)
			if got != tc.want || changed != tc.changed {
				t.Errorf("RequirePassword(%q) = %q, %v; want %q, %v", tc.in, got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestPasswordIsGeneratedOnceAndPrivate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "password")
	first, err := Password(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !validPassword(first) {
		t.Fatalf("generated password %q is not 64 hex digits", first)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("password file mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := Password(file, nil)
	if err != nil || again != first {
		t.Errorf("second read = %q, %v; want the first password back", again, err)
	}
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Password(file, nil); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a foreign password file: err = %v, want one naming %s", err, file)
	}
}
