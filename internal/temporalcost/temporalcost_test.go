package temporalcost

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

func ev(t enumspb.EventType) *historypb.HistoryEvent { return &historypb.HistoryEvent{EventType: t} }

func started(attempt int32) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED,
		Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{Attempt: attempt}}}
}

func marker(name string) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
		Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{MarkerName: name}}}
}

func completed(nonFirstLocal uint32) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
		Attributes: &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{
			MeteringMetadata: &commonpb.MeteringMetadata{NonfirstLocalActivityExecutionAttempts: nonFirstLocal}}}}
}

func upsert(names ...string) *historypb.HistoryEvent {
	fields := map[string]*commonpb.Payload{}
	for _, n := range names {
		fields[n] = &commonpb.Payload{}
	}
	return &historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
		Attributes: &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{
			SearchAttributes: &commonpb.SearchAttributes{IndexedFields: fields}}}}
}

func TestOf(t *testing.T) {
	task := []*historypb.HistoryEvent{ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED), ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED)}
	cases := []struct {
		name   string
		events []*historypb.HistoryEvent
		want   Cost
	}{
		{"signal-with-start is one action, its signal included",
			append([]*historypb.HistoryEvent{ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)}, task...),
			Cost{Events: 4, WorkflowTasks: 1, Signals: 1, Actions: 1}},
		{"a plain start, then a signal: two",
			append(append([]*historypb.HistoryEvent{ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)}, task...), ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)),
			Cost{Events: 4, WorkflowTasks: 1, Signals: 1, Actions: 2}},
		{"an activity retried twice: three attempts, three actions",
			[]*historypb.HistoryEvent{ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), started(3), ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)},
			Cost{Events: 3, ActivityTasks: 3, Actions: 3}},
		{"local activities of one workflow task: one action",
			[]*historypb.HistoryEvent{completed(0), marker("LocalActivity"), marker("LocalActivity"), ev(enumspb.EVENT_TYPE_TIMER_STARTED),
				ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED), ev(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED), completed(0)},
			Cost{Events: 7, WorkflowTasks: 1, LocalActivities: 2, Timers: 1, Actions: 2}},
		{"a version marker is not a local activity",
			[]*historypb.HistoryEvent{completed(0), marker("Version"), completed(0)},
			Cost{Events: 3}},
		{"search attribute upserts count, the change version alone does not",
			[]*historypb.HistoryEvent{upsert("HyperFleetGeneration", "HyperFleetReconciled"), upsert("TemporalChangeVersion")},
			Cost{Events: 2, Actions: 1}},
		{"local activity retries are one action each",
			[]*historypb.HistoryEvent{completed(0), marker("LocalActivity"), completed(2)},
			Cost{Events: 3, LocalActivities: 1, Actions: 3}},
		{"local activities of a task still open are counted",
			[]*historypb.HistoryEvent{completed(0), marker("LocalActivity")},
			Cost{Events: 2, LocalActivities: 1, Actions: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.events); got != tc.want {
				t.Errorf("Of() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAddSub(t *testing.T) {
	a := Cost{Events: 5, WorkflowTasks: 2, ActivityTasks: 3, LocalActivities: 1, Timers: 1, Signals: 2, Actions: 7}
	b := Cost{Events: 1, WorkflowTasks: 1, ActivityTasks: 1, LocalActivities: 1, Timers: 1, Signals: 1, Actions: 1}
	if got := a.Add(b).Sub(b); got != a {
		t.Errorf("a+b-b = %+v, want %+v", got, a)
	}
}
