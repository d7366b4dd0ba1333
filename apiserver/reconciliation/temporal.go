package reconciliation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// DefaultTimeout bounds a read of Temporal: past it the endpoint answers
// 503, and every other route is unaffected.
const DefaultTimeout = 3 * time.Second

// TemporalReader reads a resource's workflow from Temporal: its
// description (status, adapter runs pending on their queues) and, while
// it runs, its state query.
type TemporalReader struct {
	Client  client.Client
	Timeout time.Duration
}

// ErrUnavailable wraps a failure to read Temporal in time.
var ErrUnavailable = errors.New("the workflow engine did not answer")

// Read reads the workflow of a resource.
func (t *TemporalReader) Read(ctx context.Context, kind, id string) (Workflow, error) {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wf := Workflow{ID: reconcile.WorkflowID(kind, id)}
	desc, err := t.Client.DescribeWorkflowExecution(ctx, wf.ID, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return wf, nil
	case err != nil:
		return wf, fmt.Errorf("%w: describe %s: %v", ErrUnavailable, wf.ID, err)
	}
	wf.Found = true
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		wf.View.Phase = reconcile.PhaseFinished
		return wf, nil
	}
	wf.Pending = map[string]PendingRun{}
	for _, p := range desc.GetPendingActivities() {
		adapter, ok := strings.CutPrefix(p.GetActivityOptions().GetTaskQueue().GetName(), reconcile.AdapterTaskQueue(""))
		if !ok || p.GetActivityType().GetName() != reconcile.ActivityRun {
			continue
		}
		wf.Pending[adapter] = PendingRun{Attempt: p.GetAttempt(), LastFailure: p.GetLastFailure().GetMessage(),
			Scheduled: p.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED}
	}
	resp, err := t.Client.QueryWorkflow(ctx, wf.ID, "", reconcile.QueryName)
	if err != nil {
		return wf, fmt.Errorf("%w: query %s: %v", ErrUnavailable, wf.ID, err)
	}
	var raw json.RawMessage
	if err := resp.Get(&raw); err != nil {
		return wf, fmt.Errorf("decode the state of %s: %w", wf.ID, err)
	}
	if err := json.Unmarshal(raw, &wf.View); err != nil {
		return wf, fmt.Errorf("decode the state of %s: %w", wf.ID, err)
	}
	return wf, nil
}
