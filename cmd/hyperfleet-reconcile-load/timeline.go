package main

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// waits is where one workflow's time went: how long its tasks waited for a
// worker to take them (scheduled to started) and how long workers held
// them (started to completed). A workflow task's time includes the local
// read-back it ran.
type waits struct {
	started                   time.Time // the first event
	workflowQueue, workflow   time.Duration
	activityQueue, activity   time.Duration
	workflowTasks, activities int
	// heartbeatRetries counts activities that started again after their
	// attempt timed out on heartbeats. Under a burst on the embedded
	// SQLite these are mostly dispatches the server lost: it recorded the
	// attempt as started but no worker received it (see
	// docs/benchmarks.md), so each waits out the heartbeat timeout.
	heartbeatRetries int
	// activityTimeouts counts every activity attempt that timed out, of
	// any timeout type (retried or final); workflowTaskTimeouts every
	// workflow task that timed out (a lost workflow-task dispatch waits
	// out its start-to-close timeout). stickyTimeouts is the part of
	// workflowTaskTimeouts that timed out on a worker's sticky queue
	// before the worker took it (schedule-to-start): the worker was busy
	// and the task moved to the shared queue, which is Temporal's design
	// for a busy worker rather than a lost dispatch.
	activityTimeouts, workflowTaskTimeouts, stickyTimeouts int
}

func waitsOf(events []*historypb.HistoryEvent) waits {
	var w waits
	scheduled := map[int64]time.Time{}
	started := map[int64]time.Time{}
	var lastWorkflowTask time.Time // a workflow task's Started follows its Scheduled
	for _, e := range events {
		t := e.GetEventTime().AsTime()
		if w.started.IsZero() {
			w.started = t
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			lastWorkflowTask = t
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			w.workflowQueue += t.Sub(lastWorkflowTask)
			started[e.GetEventId()] = t
			w.workflowTasks++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			if s, ok := started[e.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()]; ok {
				w.workflow += t.Sub(s)
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[e.GetEventId()] = t
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := e.GetActivityTaskStartedEventAttributes()
			if s, ok := scheduled[a.GetScheduledEventId()]; ok {
				w.activityQueue += t.Sub(s)
			}
			if a.GetAttempt() > 1 && a.GetLastFailure().GetTimeoutFailureInfo() != nil {
				w.activityTimeouts++
				if a.GetLastFailure().GetTimeoutFailureInfo().GetTimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
					w.heartbeatRetries++
				}
			}
			started[e.GetEventId()] = t
			w.activities++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			w.activityTimeouts++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			w.workflowTaskTimeouts++
			if e.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				w.stickyTimeouts++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if s, ok := started[e.GetActivityTaskCompletedEventAttributes().GetStartedEventId()]; ok {
				w.activity += t.Sub(s)
			}
		}
	}
	return w
}

// timeline prints the mean of the clusters' waits: what a burst queued on.
func timeline(all map[string]waits, created map[string]time.Time) string {
	var sum waits
	var lag time.Duration
	var firstCreate, firstStart, lastStart time.Time
	n := 0
	for id, w := range all {
		c, ok := created[id]
		if !ok {
			continue
		}
		n++
		lag += w.started.Sub(c)
		if firstCreate.IsZero() || c.Before(firstCreate) {
			firstCreate = c
		}
		if firstStart.IsZero() || w.started.Before(firstStart) {
			firstStart = w.started
		}
		if w.started.After(lastStart) {
			lastStart = w.started
		}
		sum.workflowQueue += w.workflowQueue
		sum.workflow += w.workflow
		sum.activityQueue += w.activityQueue
		sum.activity += w.activity
		sum.heartbeatRetries += w.heartbeatRetries
		sum.activityTimeouts += w.activityTimeouts
		sum.workflowTaskTimeouts += w.workflowTaskTimeouts
		sum.stickyTimeouts += w.stickyTimeouts
	}
	if n == 0 {
		return ""
	}
	mean := func(d time.Duration) string { return fmt.Sprintf("%.2f s", (d / time.Duration(n)).Seconds()) }
	// The spread of the starts shows how fast the relay handed the burst
	// over, which a mean lag hides.
	return fmt.Sprintf("where a cluster's time went (mean over %d): create to workflow start %s; workflow tasks waiting %s, running %s; activity tasks waiting %s, running %s; workflows started %.2f s to %.2f s after the first create; activities retried after a heartbeat timeout: %d; activity timeouts of any type: %d; workflow task timeouts: %d (%d of them on a busy worker's sticky queue, schedule-to-start)",
		n, mean(lag), mean(sum.workflowQueue), mean(sum.workflow), mean(sum.activityQueue), mean(sum.activity),
		firstStart.Sub(firstCreate).Seconds(), lastStart.Sub(firstCreate).Seconds(), sum.heartbeatRetries,
		sum.activityTimeouts, sum.workflowTaskTimeouts, sum.stickyTimeouts)
}
