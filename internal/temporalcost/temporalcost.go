// Package temporalcost reads what a workflow cost from its history: the
// tasks the Temporal service handed to workers, the events it stored, and
// the billable actions Temporal Cloud would charge for them. The load
// driver and the end-to-end tests use it to hold the reconcile workflow to
// its budget; it is an estimate in the same way Temporal Cloud's own
// history view is (activity heartbeats and queries leave no event).
package temporalcost

import (
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// Cost of one workflow run, or the sum of several.
type Cost struct {
	// Events is the number of history events.
	Events int
	// WorkflowTasks counts workflow tasks a worker started.
	WorkflowTasks int
	// ActivityTasks counts activity attempts a worker started, retries
	// included.
	ActivityTasks int
	// LocalActivities counts local activity results recorded as markers.
	LocalActivities int
	// Timers counts timers started.
	Timers int
	// Signals counts signals received (the one that came with a
	// signal-with-start included).
	Signals int
	// Actions estimates Temporal Cloud's billable actions.
	Actions int
}

// Add sums two costs.
func (c Cost) Add(o Cost) Cost {
	return Cost{
		Events: c.Events + o.Events, WorkflowTasks: c.WorkflowTasks + o.WorkflowTasks,
		ActivityTasks: c.ActivityTasks + o.ActivityTasks, LocalActivities: c.LocalActivities + o.LocalActivities,
		Timers: c.Timers + o.Timers, Signals: c.Signals + o.Signals, Actions: c.Actions + o.Actions,
	}
}

// Sub is what happened between two readings of one workflow.
func (c Cost) Sub(o Cost) Cost {
	return Cost{
		Events: c.Events - o.Events, WorkflowTasks: c.WorkflowTasks - o.WorkflowTasks,
		ActivityTasks: c.ActivityTasks - o.ActivityTasks, LocalActivities: c.LocalActivities - o.LocalActivities,
		Timers: c.Timers - o.Timers, Signals: c.Signals - o.Signals, Actions: c.Actions - o.Actions,
	}
}

func (c Cost) String() string {
	return fmt.Sprintf("%d activity tasks, %d workflow tasks, %d events, %d actions", c.ActivityTasks, c.WorkflowTasks, c.Events, c.Actions)
}

// localActivityMarker is the marker name the SDKs record a local
// activity's result under.
const localActivityMarker = "LocalActivity"

// changeVersionAttribute is the search attribute workflow versioning
// upserts; Temporal Cloud does not charge for it.
const changeVersionAttribute = "TemporalChangeVersion"

// Of reads the cost of one run's history. The rules follow Temporal
// Cloud's published definition of an action:
//   - a workflow start (client, signal-with-start or continue-as-new) is
//     one; a signal-with-start that started the run is one in all, its
//     signal included;
//   - every signal received, timer started and search-attribute upsert
//     (except TemporalChangeVersion alone) is one;
//   - every activity attempt is one (the last attempt's started event
//     carries the count);
//   - every workflow task that recorded local activity markers is one,
//     plus one per local activity attempt after the first.
func Of(events []*historypb.HistoryEvent) Cost {
	var c Cost
	c.Events = len(events)
	localInTask := false
	for i, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			c.Actions++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			c.Signals++
			// The signal of a signal-with-start that started this run is
			// part of the start's one action: it is the event right after
			// the start.
			if i != 1 || events[0].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
				c.Actions++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			c.WorkflowTasks++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			if localInTask {
				c.Actions++
			}
			localInTask = false
			if md := ev.GetWorkflowTaskCompletedEventAttributes().GetMeteringMetadata(); md != nil {
				c.Actions += int(md.GetNonfirstLocalActivityExecutionAttempts())
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == localActivityMarker {
				c.LocalActivities++
				localInTask = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			c.Actions++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attempts := int(ev.GetActivityTaskStartedEventAttributes().GetAttempt())
			attempts = max(attempts, 1)
			c.ActivityTasks += attempts
			c.Actions += attempts - 1
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			c.Timers++
			c.Actions++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			if !onlyChangeVersion(ev) {
				c.Actions++
			}
		}
	}
	// Local activities recorded by a task the history does not close yet
	// (the run is still open) are charged when it completes.
	if localInTask {
		c.Actions++
	}
	return c
}

func onlyChangeVersion(ev *historypb.HistoryEvent) bool {
	fields := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
	if len(fields) == 0 {
		return false
	}
	for name := range fields {
		if !strings.EqualFold(name, changeVersionAttribute) {
			return false
		}
	}
	return true
}
