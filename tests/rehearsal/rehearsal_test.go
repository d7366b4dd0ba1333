package rehearsal

import (
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/internal/histories"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// The rehearsal is only worth its name if it cannot replay what the plain
// workflow recorded: every history under workflows/testdata (which the
// plain workflow replays) fails with a non-determinism error.
func TestWorkflowCannotReplayPlainHistories(t *testing.T) {
	files, err := histories.Files(filepath.Join("..", "..", "workflows", "testdata"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories under workflows/testdata (err %v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			history, err := histories.Read(file)
			if err != nil {
				t.Fatal(err)
			}
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: reconcile.WorkflowName})
			// TMPRL1100 is the SDK's code for a non-determinism error.
			if err := replayer.ReplayWorkflowHistory(nil, history); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
				t.Errorf("replay %s = %v, want a non-determinism error (TMPRL1100)", file, err)
			}
		})
	}
}
