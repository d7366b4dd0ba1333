package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHistoryShards(t *testing.T) {
	written := func(t *testing.T, content string) string {
		dir := t.TempDir()
		if content != "" {
			if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config", "temporal-history.yaml"), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cases := []struct {
		name    string
		config  string // the history service's configuration of the last start ("" none)
		asked   int
		want    int
		wantErr string
	}{
		{"a new installation takes the default", "", 0, DefaultHistoryShards, ""},
		{"a new installation takes what is asked", "", 64, 64, ""},
		{"an existing database keeps its count", "persistence:\n  numHistoryShards: 4\n", 0, 4, ""},
		{"asking for the count it has is fine", "persistence:\n  numHistoryShards: 512\n", 512, 512, ""},
		{"another count than the database's is refused", "persistence:\n  numHistoryShards: 4\n", 512, 0, "created with 4 shards"},
		{"a configuration without the line is the former default", "persistence: {}\n", 0, formerDefaultShards, ""},
		{"a negative count is refused", "", -1, 0, "not a count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := historyShards(written(t, c.config), c.asked)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("historyShards = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}
