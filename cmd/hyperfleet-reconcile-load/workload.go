package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hyperfleet/hyperfleet/taskconfigs"
	"github.com/hyperfleet/hyperfleet/worker"
)

// workload is a set of cluster adapters to reconcile with.
type workload struct {
	name     string
	adapters []string
	files    []worker.AdapterFiles
	cleanup  func()
}

func loadWorkload(name, chainDir string) (*workload, error) {
	switch name {
	case "shipped":
		dir, err := os.MkdirTemp("", "hyperfleet-reconcile-load-")
		if err != nil {
			return nil, err
		}
		dirs, err := taskconfigs.Extract(dir)
		if err != nil {
			return nil, err
		}
		return newWorkload(name, dirs, func() { _ = os.RemoveAll(dir) }, "validation", "landing-zone", "validation-job")
	case "chain":
		dirs := map[string]string{}
		for _, a := range []string{"cl-namespace", "cl-job", "cl-deployment"} {
			d := filepath.Join(chainDir, a)
			if _, err := os.Stat(filepath.Join(d, "adapter-task-config.yaml")); err != nil {
				return nil, fmt.Errorf("the chain workload runs upstream HyperFleet's end-to-end adapters: %s not found (pass --chain-dir): %w", a, err)
			}
			dirs[a] = d
		}
		return newWorkload(name, dirs, func() {}, "cl-namespace", "cl-job", "cl-deployment")
	}
	return nil, fmt.Errorf("unknown --workload %q (shipped, chain)", name)
}

func newWorkload(name string, dirs map[string]string, cleanup func(), adapters ...string) (*workload, error) {
	w := &workload{name: name, adapters: adapters, cleanup: cleanup}
	for _, a := range adapters {
		d, ok := dirs[a]
		if !ok {
			cleanup()
			return nil, fmt.Errorf("adapter %s not found", a)
		}
		w.files = append(w.files, worker.AdapterFiles{Config: filepath.Join(d, "adapter-config.yaml"), TaskConfig: filepath.Join(d, "adapter-task-config.yaml")})
	}
	return w, nil
}
