// Package taskconfigs ships HyperFleet's own adapters (one directory each,
// holding adapter-config.yaml, adapter-task-config.yaml and any manifest
// refs) and their dry-run fixtures under testdata/. The binary embeds them
// so `hyperfleet dev` runs without a source checkout.
package taskconfigs

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

//go:embed */*.yaml
var shipped embed.FS

// Extract writes every shipped adapter under dir/<adapter>/, replacing
// older copies, and returns the adapter directories by name.
func Extract(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(shipped, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := shipped.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Dir(p)
		target := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return fmt.Errorf("extract shipped adapter %s: %w", p, err)
		}
		out[name] = filepath.Dir(target)
		return nil
	})
	return out, err
}
