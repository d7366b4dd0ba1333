package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 43: the workers are system callers in gateway style by the
// system header carrying the secret of --api-system-secret-file, never
// by the header alone.
func TestWorkerSystemHeaders(t *testing.T) {
	const secret = "worker-secret-0123456789abcdef-0123456789"
	dir := t.TempDir()
	good := filepath.Join(dir, "secret")
	short := filepath.Join(dir, "short")
	for file, content := range map[string]string{good: secret + "\n", short: "too-short\n"} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, header, file string
		want               string // the value sent; "" with an error or nothing
		err                []string
	}{
		{name: "neither", want: ""},
		{name: "both", header: "X-HyperFleet-System", file: good, want: secret},
		{name: "a header without its secret", header: "X-HyperFleet-System", err: []string{"--api-system-header X-HyperFleet-System needs --api-system-secret-file", "HYPERFLEET_API_SYSTEM_SECRET_FILE"}},
		{name: "a secret without its header", file: good, err: []string{"--api-system-secret-file needs --api-system-header"}},
		{name: "a bad header name", header: "X System", file: good, err: []string{"is not a header name"}},
		{name: "a missing secret file", header: "X-S", file: filepath.Join(dir, "missing"), err: []string{"--api-system-secret-file: open " + filepath.Join(dir, "missing"), "openssl rand"}},
		{name: "a short secret", header: "X-S", file: short, err: []string{short + " holds 9 characters", "at least 32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := workerFlags{systemHeader: tc.header, systemSecret: tc.file}
			got, err := f.apiHeaders()
			if tc.err != nil {
				for _, want := range tc.err {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("apiHeaders = %v, %v; want an error saying %q", got, err, want)
					}
				}
				if err != nil && strings.Contains(err.Error(), "too-short") {
					t.Errorf("the error quotes the file's content: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("apiHeaders = %v, want none", got)
			case tc.want != "" && (len(got) != 1 || got[0] != [2]string{tc.header, tc.want}):
				t.Errorf("apiHeaders = %v, want %s: <the secret>", got, tc.header)
			}
		})
	}
}
