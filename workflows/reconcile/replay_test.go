package reconcile

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/internal/histories"
)

// TestReplayRecordedHistories replays histories the previous release
// recorded from real runs (tests/reconcile with
// HYPERFLEET_RECORD_HISTORIES=1): this release must run them on. Pinned
// workflows never replay another release's history, but an unversioned
// deployment upgrades in place, and every workflow the previous
// (unversioned) release started moves to this release by replay when this
// release's first worker deployment version becomes current. Each release
// replaces these files with its own recordings; older ones are not kept
// (docs/operator-guide.md, "Upgrading").
func TestReplayRecordedHistories(t *testing.T) {
	files, err := histories.Files(filepath.Join("..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found %d recorded histories under workflows/testdata, want at least 3", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			history, err := histories.Read(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(history.GetEvents()) < 10 {
				t.Fatalf("%d events: not a real run", len(history.GetEvents()))
			}
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
			if err := replayer.ReplayWorkflowHistory(nil, history); err != nil {
				t.Errorf("replay %s: %v", file, err)
			}
		})
	}
}
