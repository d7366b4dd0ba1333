package dryrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
)

func TestSmokeCompat(t *testing.T) {
	root := "../../../shared/compat/upstream-adapter-examples"
	for _, c := range []struct{ dir, task, adapter, discovery string }{
		{"adapter-kubernetes", "adapter-kubernetes/adapter-task-config.yaml", "adapter-kubernetes/adapter-config.yaml", "adapter-kubernetes/dryrun-discovery.json"},
		{"adapter-maestro", "adapter-maestro/adapter-task-config.yaml", "adapter-maestro/adapter-config.yaml", "adapter-maestro/dryrun-discovery.json"},
		{"delete", "adapter-dryrun/dryrun-kubernetes-delete-task-config.yaml", "", ""},
		{"cel", "adapter-dryrun/dryrun-cel-showcase-task-config.yaml", "", ""},
	} {
		af := ""
		if c.adapter != "" {
			af = filepath.Join(root, c.adapter)
		}
		b, ps := taskconfig.Load(af, filepath.Join(root, c.task), taskconfig.Options{})
		if err := ps.Err(); err != nil {
			t.Fatal(err)
		}
		disc := ""
		if c.discovery != "" {
			disc = filepath.Join(root, c.discovery)
		}
		rep, err := Run(context.Background(), b, Inputs{EventFile: filepath.Join(root, "adapter-dryrun/event.json"),
			APIResponsesFile: filepath.Join(root, "adapter-dryrun/dryrun-api-responses.json"), DiscoveryFile: disc, Now: time.Date(2026, 2, 18, 11, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		rep.WriteText(os.Stdout, false)
	}
}
