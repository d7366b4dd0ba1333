package reconcile

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays histories recorded from real runs
// (tests/reconcile with HYPERFLEET_RECORD_HISTORIES=1): a change to the
// workflow that would break running workflows fails here. Such a change
// needs workflow.GetVersion, not a re-recording. Older histories stay, so
// workflows started by earlier releases keep replaying: v1-* come from the
// first release (before retry rounds skipped settled adapters and Prepare
// could stand in for Apply), v2-* from the last release of protocol 1 (three
// activities per adapter, a read-back activity, one backoff for every
// round); v3-* from protocol 2 (one activity per adapter, progress rounds,
// wake-ups), v4-* from protocol 3 (search attributes written from the
// read-back only) before a round waiting only on watched objects backed
// off longer, v5-* from protocol 3 after that change (cluster-dependent-
// chain holds its "watched-backoff" marker), and the unprefixed ones from
// protocol 4 (the same rounds, no marker).
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found %d recorded histories under workflows/testdata, want at least 3", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			history, err := client.HistoryFromJSON(zr, client.HistoryJSONOptions{})
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
