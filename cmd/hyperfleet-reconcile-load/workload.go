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
	// maestro: the adapters publish through a real Maestro server and agent.
	maestro bool
}

func loadWorkload(name, chainDir string) (*workload, error) {
	switch name {
	case "shipped":
		return shippedWorkload(name, "validation", "landing-zone", "validation-job")
	case "status":
		// The validation adapter alone: it checks the spec and reports
		// status, applying nothing (what "status-only" measures).
		return shippedWorkload(name, "validation")
	case "chain":
		return upstreamWorkload(name, chainDir, "cl-namespace", "cl-job", "cl-deployment")
	case "maestro":
		// Upstream's cl-maestro: a ManifestWork (namespace and config map)
		// through Maestro, Available from the agent's status feedback.
		w, err := upstreamWorkload(name, chainDir, "cl-maestro")
		if w != nil {
			w.maestro = true
		}
		return w, err
	case "namespace":
		// Upstream's cl-namespace: a namespace applied directly, the
		// Kubernetes-transport counterpart of the maestro workload.
		return upstreamWorkload(name, chainDir, "cl-namespace")
	}
	return nil, fmt.Errorf("unknown --workload %q (shipped, status, chain, maestro, namespace)", name)
}

// shippedWorkload runs shipped adapters, extracted to a temporary
// directory.
func shippedWorkload(name string, adapters ...string) (*workload, error) {
	dir, err := os.MkdirTemp("", "hyperfleet-reconcile-load-")
	if err != nil {
		return nil, err
	}
	dirs, err := taskconfigs.Extract(dir)
	if err != nil {
		return nil, err
	}
	return newWorkload(name, dirs, func() { _ = os.RemoveAll(dir) }, adapters...)
}

// upstreamWorkload runs upstream HyperFleet's end-to-end adapters from dir.
func upstreamWorkload(name, dir string, adapters ...string) (*workload, error) {
	dirs := map[string]string{}
	for _, a := range adapters {
		d := filepath.Join(dir, a)
		if _, err := os.Stat(filepath.Join(d, "adapter-task-config.yaml")); err != nil {
			return nil, fmt.Errorf("the %s workload runs upstream HyperFleet's end-to-end adapters: %s not found (pass --chain-dir): %w", name, a, err)
		}
		dirs[a] = d
	}
	return newWorkload(name, dirs, func() {}, adapters...)
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
