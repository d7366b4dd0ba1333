// Package histories reads the workflow histories recorded from real runs
// (workflows/testdata/*.json.gz) that replay tests run.
package histories

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// Files lists the recorded histories in dir.
func Files(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*.json.gz"))
}

// Read reads one gzipped JSON history.
func Read(file string) (*historypb.History, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	h, err := client.HistoryFromJSON(zr, client.HistoryJSONOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return h, nil
}
