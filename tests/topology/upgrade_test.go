//go:build integration

package topology_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/tests/rehearsal"
	"github.com/hyperfleet/hyperfleet/worker/versioning"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// upgradeClusters is how many live workflows the roll-out moves.
const upgradeClusters = 200

// Contract (rolling upgrades): 200 live reconcile workflows on release A;
// release B's workers start, with a workflow change that cannot replay
// A's histories (package rehearsal); A's workers are stopped (they drain
// first). Every workflow then runs its next round on B, none fails a
// workflow task (a non-determinism error would), none is stuck.
func TestRollingUpgradeMovesLiveWorkflows(t *testing.T) {
	// Release B is a test build (-tags rehearsal) whose workers host
	// package rehearsal's workflow; the product binary, release A's, has
	// no such flag.
	relBBinary := testenv.RehearsalBinary(t)
	if out, err := exec.Command(testenv.Binary(t), "worker", "--upgrade-rehearsal").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "unknown flag: --upgrade-rehearsal") {
		t.Fatalf("the product binary's worker --upgrade-rehearsal = %v, want unknown flag:\n%s", err, out)
	}
	s := startShape(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	relA := versioning.Version{Deployment: versioning.DefaultDeployment, BuildID: "release-a"}
	relB := versioning.Version{Deployment: versioning.DefaultDeployment, BuildID: "release-b"}

	// Release A: 200 Reconciled clusters, their workflows idle in the
	// stability window, pinned to A.
	b := startBurst(t, s.tp.APIURLs(), upgradeClusters, 8, "upgrade")
	b.wait(t, 5*time.Minute)
	s.waitAllReconciled(5 * time.Minute)
	ids := b.ids
	if len(ids) != upgradeClusters {
		t.Fatalf("%d clusters created, want %d", len(ids), upgradeClusters)
	}
	waitPinned(ctx, t, s.tc, relA, upgradeClusters)

	// Release B cannot replay release A's histories: the change is really
	// incompatible (what worker versioning is for).
	replayer := sdkworker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(rehearsal.Workflow, workflow.RegisterOptions{Name: reconcile.WorkflowName})
	err := replayer.ReplayWorkflowExecution(ctx, s.tc.WorkflowService(), nil, "default",
		workflow.Execution{ID: reconcile.WorkflowID(resource.KindCluster, ids[0])})
	// TMPRL1100 is the SDK's code for a non-determinism error.
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("release B replayed a release A history (err %v): the rehearsal change is not incompatible", err)
	}

	// Release B starts: a new version, so it makes itself current and
	// tells A's workflows to move.
	start := time.Now()
	for _, name := range []string{"worker-b1", "worker-b2"} {
		if _, err := s.tp.AddWorker(ctx, name, relBBinary, "--build-id", relB.BuildID, "--upgrade-rehearsal"); err != nil {
			t.Fatal(err)
		}
	}
	// Release A stops, as a rolling update stops it: SIGTERM; each worker
	// drains its version before it stops polling.
	for _, name := range []string{"worker-1", "worker-2"} {
		if err := s.tp.Process(name).Stop(6 * time.Minute); err != nil {
			t.Fatalf("stop %s: %v", name, err)
		}
	}
	t.Logf("release A drained and stopped %s after release B started", time.Since(start).Round(time.Millisecond))
	if n, err := versioning.Pinned(ctx, s.tc, relA); err != nil || n != 0 {
		t.Fatalf("%d workflows still pinned to release A after its workers stopped (err %v)", n, err)
	}
	if cur, err := versioning.Current(ctx, s.tc, relA.Deployment); err != nil || cur != relB {
		t.Fatalf("current version = %v (err %v), want %v", cur, err, relB)
	}

	// Every workflow's next round runs on B.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if a := call(http.MethodPatch, s.tp.BalancerURL()+apiPath+"/clusters/"+id, `{"labels":{"release":"b"}}`); a.err != nil || a.code != http.StatusOK {
				t.Errorf("PATCH %s: %v %d %s", id, a.err, a.code, a.body)
			}
		}()
	}
	wg.Wait()
	s.waitAllReconciled(5 * time.Minute)
	t.Logf("every cluster Reconciled at its new generation on release B %s after B started", time.Since(start).Round(time.Millisecond))

	// Each workflow's current run is pinned to B and ran B's code (its
	// rehearsal marker); no run of any workflow failed a workflow task,
	// but for the server refusing a continue-as-new that a signal arriving
	// meanwhile makes stale (UnhandledCommand: the SDK runs the task again
	// with the signal, as designed).
	unhandled := 0
	for _, id := range ids {
		wid := reconcile.WorkflowID(resource.KindCluster, id)
		d, err := s.tc.DescribeWorkflowExecution(ctx, wid, "")
		if err != nil {
			t.Fatal(err)
		}
		info := d.GetWorkflowExecutionInfo()
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("%s: status %s", wid, info.GetStatus())
			continue
		}
		if got := info.GetVersioningInfo().GetDeploymentVersion().GetBuildId(); got != relB.BuildID {
			t.Errorf("%s runs on build %q, want %q", wid, got, relB.BuildID)
		}
		runs := workflowRuns(ctx, t, s.tc, wid)
		if len(runs) < 2 {
			t.Errorf("%s has %d runs: it did not continue as new onto release B", wid, len(runs))
		}
		for _, run := range runs {
			failed, marker := scanHistory(ctx, t, s.tc, wid, run)
			for _, f := range failed {
				if strings.HasPrefix(f, enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND.String()+":") {
					unhandled++
					continue
				}
				t.Errorf("%s run %s: workflow task failed: %s", wid, run, f)
			}
			if run == info.GetExecution().GetRunId() && !marker {
				t.Errorf("%s: its current run did not run release B's code (no rehearsal marker)", wid)
			}
		}
	}
	t.Logf("%d continue-as-new commands refused as stale (UnhandledCommand) and run again", unhandled)
}

// waitPinned waits until n reconcile workflows are pinned to v.
func waitPinned(ctx context.Context, t *testing.T, c client.Client, v versioning.Version, n int64) {
	t.Helper()
	await.Eventually(t, time.Minute, "workflows pinned to "+v.String(), func() (bool, string) {
		got, err := versioning.Pinned(ctx, c, v)
		return err == nil && got == n, fmt.Sprintf("%d pinned (err %v), want %d", got, err, n)
	})
}

// workflowRuns lists every run of a workflow id.
func workflowRuns(ctx context.Context, t *testing.T, c client.Client, id string) []string {
	t.Helper()
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.GetExecutions() {
		out = append(out, e.GetExecution().GetRunId())
	}
	return out
}

// scanHistory reports a run's failed workflow tasks (cause: message) and
// whether it recorded the upgrade rehearsal's marker.
func scanHistory(ctx context.Context, t *testing.T, c client.Client, id, run string) (failed []string, marker bool) {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			a := e.GetWorkflowTaskFailedEventAttributes()
			failed = append(failed, a.GetCause().String()+": "+a.GetFailure().GetMessage())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if a := e.GetMarkerRecordedEventAttributes(); a.GetMarkerName() == "SideEffect" {
				var v string
				err := converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["data"], &v)
				marker = marker || err == nil && v == rehearsal.Marker
			}
		}
	}
	return failed, marker
}
