//go:build integration

// Reading workflows back from Temporal: state queries, histories, recorded
// histories for the replay test.

package reconcile

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

func (s *system) view(kind, id string) (reconcile.View, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var v reconcile.View
	res, err := s.tc.QueryWorkflow(ctx, reconcile.WorkflowID(kind, id), "", reconcile.QueryName)
	if err != nil {
		return v, err
	}
	err = res.Get(&v)
	return v, err
}

func (s *system) describeWorkflow(kind, id string) *workflowInfo {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := s.tc.DescribeWorkflowExecution(ctx, reconcile.WorkflowID(kind, id), "")
	if err != nil {
		s.t.Fatalf("describe workflow of %s %s: %v", kind, id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	out := &workflowInfo{Status: info.GetStatus(), RunID: info.GetExecution().GetRunId()}
	if ct := info.GetCloseTime(); ct != nil {
		out.Closed = ct.AsTime()
	}
	return out
}

// findWorkflows runs a visibility query, as an operator would in the UI,
// and returns the workflow ids it lists.
func (s *system) findWorkflows(query string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids, nil
}

type workflowInfo struct {
	Status enumspb.WorkflowExecutionStatus
	RunID  string
	Closed time.Time
}

// history returns the events of a workflow's current run.
func (s *system) history(kind, id string) []*historypb.HistoryEvent {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	it := s.tc.GetWorkflowHistory(ctx, reconcile.WorkflowID(kind, id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatalf("history of %s %s: %v", kind, id, err)
		}
		events = append(events, ev)
	}
	return events
}

// recordHistory writes a workflow's history (gzipped JSON) under
// workflows/testdata for the replay test when HYPERFLEET_RECORD_HISTORIES
// is set: re-record after an intended change to the workflow.
func (s *system) recordHistory(name, kind, id string) {
	if os.Getenv("HYPERFLEET_RECORD_HISTORIES") == "" {
		return
	}
	events := s.history(kind, id)
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		s.t.Fatal(err)
	}
	file := filepath.Join("..", "..", "workflows", "testdata", name+".json.gz")
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(file, gz.Bytes(), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("recorded %d events to %s", len(events), file)
}

// activityCall is one scheduled adapter activity, decoded from history.
type activityCall struct {
	Activity   string
	Adapter    string
	Generation int64
	Attempt    int32
	// Local says the run was a local activity of the workflow task
	// (the adapter is hosted beside the reconciler).
	Local bool
}

// activityCalls lists the adapter activities a workflow scheduled, in
// order, with the event generation each one acted on.
func activityCalls(t *testing.T, events []*historypb.HistoryEvent) []activityCall {
	t.Helper()
	var out []activityCall
	for _, ev := range events {
		if call, ok := localRun(t, ev); ok {
			out = append(out, call)
			continue
		}
		a := ev.GetActivityTaskScheduledEventAttributes()
		if a == nil || !strings.HasPrefix(a.GetTaskQueue().GetName(), reconcile.AdapterTaskQueue("")) {
			continue
		}
		call := activityCall{Activity: a.GetActivityType().GetName(), Adapter: strings.TrimPrefix(a.GetTaskQueue().GetName(), reconcile.AdapterTaskQueue(""))}
		payloads := a.GetInput().GetPayloads()
		if len(payloads) != 1 {
			t.Fatalf("activity %s has %d inputs", call.Activity, len(payloads))
		}
		var in struct {
			Event struct {
				Generation int64 `json:"generation"`
			} `json:"event"`
		}
		if err := json.Unmarshal(payloads[0].GetData(), &in); err != nil {
			t.Fatalf("decode %s input: %v", call.Activity, err)
		}
		call.Generation = in.Event.Generation
		out = append(out, call)
	}
	return out
}

// localRun reads an adapter run recorded as a local activity's marker:
// its result names the adapter and the generation. A run the worker
// answered as not hosted is no run.
func localRun(t *testing.T, ev *historypb.HistoryEvent) (activityCall, bool) {
	t.Helper()
	m := ev.GetMarkerRecordedEventAttributes()
	if m == nil || m.GetMarkerName() != "LocalActivity" {
		return activityCall{}, false
	}
	var data struct{ ActivityType string }
	if p := m.GetDetails()["data"].GetPayloads(); len(p) == 1 {
		if err := json.Unmarshal(p[0].GetData(), &data); err != nil {
			t.Fatalf("decode a local activity's marker: %v", err)
		}
	}
	if data.ActivityType != reconcile.ActivityRun {
		return activityCall{}, false
	}
	call := activityCall{Activity: reconcile.ActivityRun, Local: true}
	if p := m.GetDetails()["result"].GetPayloads(); len(p) == 1 {
		var res reconcile.RunResult
		if err := json.Unmarshal(p[0].GetData(), &res); err != nil {
			t.Fatalf("decode a local adapter run's result: %v", err)
		}
		if res.NotHosted {
			return activityCall{}, false
		}
		call.Adapter, call.Generation = res.Adapter, res.Generation
	}
	return call, true
}
