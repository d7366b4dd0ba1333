package main

import (
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func event(id int64, at time.Duration, typ enumspb.EventType, attrs any) *historypb.HistoryEvent {
	e := &historypb.HistoryEvent{EventId: id, EventType: typ, EventTime: timestamppb.New(time.Unix(0, 0).Add(at))}
	switch a := attrs.(type) {
	case *historypb.WorkflowTaskCompletedEventAttributes:
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: a}
	case *historypb.ActivityTaskStartedEventAttributes:
		e.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: a}
	case *historypb.ActivityTaskCompletedEventAttributes:
		e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: a}
	case *historypb.WorkflowTaskTimedOutEventAttributes:
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskTimedOutEventAttributes{WorkflowTaskTimedOutEventAttributes: a}
	}
	return e
}

// A start, a workflow task that waits 3 s for a poller and runs 0.1 s, an
// activity that waits 0.5 s and runs 1 s, one whose first dispatch was lost
// (21 s) and one retried after its own failure.
func TestWaitsOfSplitsQueueingFromRunning(t *testing.T) {
	ms := time.Millisecond
	events := []*historypb.HistoryEvent{
		event(1, 1000*ms, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, nil),
		event(2, 1000*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, nil),
		event(3, 4000*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, nil),
		event(4, 4100*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, &historypb.WorkflowTaskCompletedEventAttributes{StartedEventId: 3}),
		event(5, 4100*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil),
		event(6, 4600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: 5}),
		event(7, 5600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 5, StartedEventId: 6}),
		// A dispatch lost on its first attempt: started again after the
		// heartbeat timeout (20 s).
		event(8, 5600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil),
		event(9, 26600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: 8, Attempt: 2,
			LastFailure: &failurepb.Failure{FailureInfo: &failurepb.Failure_TimeoutFailureInfo{TimeoutFailureInfo: &failurepb.TimeoutFailureInfo{TimeoutType: enumspb.TIMEOUT_TYPE_HEARTBEAT}}}}),
		event(10, 27600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 8, StartedEventId: 9}),
		// Retried after a failure of its own: not counted.
		event(11, 27600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil),
		event(12, 27600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: 11, Attempt: 2,
			LastFailure: &failurepb.Failure{FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{}}}}),
		event(13, 27600*ms, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 11, StartedEventId: 12}),
		// A workflow task left on a busy worker's sticky queue, then one
		// whose dispatch was lost after it started.
		event(14, 27600*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, &historypb.WorkflowTaskTimedOutEventAttributes{TimeoutType: enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START}),
		event(15, 37600*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, &historypb.WorkflowTaskTimedOutEventAttributes{TimeoutType: enumspb.TIMEOUT_TYPE_START_TO_CLOSE}),
	}
	w := waitsOf(events)
	want := waits{started: time.Unix(1, 0), workflowQueue: 3 * time.Second, workflow: 100 * ms,
		activityQueue: 21500 * ms, activity: 2 * time.Second, workflowTasks: 1, activities: 3, heartbeatRetries: 1, activityTimeouts: 1,
		workflowTaskTimeouts: 2, stickyTimeouts: 1}
	if !w.started.Equal(want.started) {
		t.Errorf("started %v, want %v", w.started, want.started)
	}
	w.started = want.started
	if w != want {
		t.Errorf("waits %+v, want %+v", w, want)
	}
	line := timeline(map[string]waits{"a": w}, map[string]time.Time{"a": time.Unix(0, 500*int64(ms))})
	for _, s := range []string{"create to workflow start 0.50 s", "workflow tasks waiting 3.00 s, running 0.10 s", "activity tasks waiting 21.50 s, running 2.00 s", "workflows started 0.50 s to 0.50 s after the first create", "retried after a heartbeat timeout: 1", "workflow task timeouts: 2 (1 of them on a busy worker's sticky queue"} {
		if !strings.Contains(line, s) {
			t.Errorf("timeline %q lacks %q", line, s)
		}
	}
}

// A create committed at 0 whose workflow started at 4 ms, whose first
// workflow task waited 1 ms for a worker and which was Ready 6 ms after
// the task started; a second workflow task does not move the split, and
// a history without a started task gives none.
func TestCreateParts(t *testing.T) {
	ms := time.Millisecond
	at := func(d time.Duration) time.Time { return time.Unix(0, 0).Add(d) }
	events := []*historypb.HistoryEvent{
		event(1, 4*ms, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, nil),
		event(2, 4*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, nil),
		event(3, 5*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, nil),
		event(4, 12*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, nil),
		event(5, 13*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, nil),
		event(6, 14*ms, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, nil),
	}
	got, ok := createParts(events, at(0), at(11*ms))
	if want := [3]time.Duration{4 * ms, 1 * ms, 6 * ms}; !ok || got != want {
		t.Errorf("createParts = %v, %v; want %v", got, ok, want)
	}
	if _, ok := createParts(events[:2], at(0), at(11*ms)); ok {
		t.Error("createParts of a history without a started workflow task: want none")
	}
}
