package executor

// The engine as a whole: operators, events, metrics, concurrency, watches.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport/memory"
	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
)

func TestCheckOperators(t *testing.T) {
	tests := []struct {
		op     taskconfig.Operator
		actual any
		found  bool
		value  any
		want   bool
	}{
		{"equals", "True", true, "True", true},
		{"equals", int64(3), true, 3.0, true},
		{"equals", "77", true, int64(77), true},
		{"equals", "007", true, "7", false},
		{"equals", nil, false, "x", false},
		{"notEquals", "a", true, "b", true},
		{"notEquals", nil, false, "b", true},
		{"in", "us-east-1", true, []any{"us-east-1", "eu"}, true},
		{"in", "x", true, []any{"a"}, false},
		{"notIn", "x", true, []any{"a"}, true},
		{"notIn", "a", true, []any{"a"}, false},
		{"contains", "production-eu", true, "prod", true},
		{"contains", []any{"a", "b"}, true, "b", true},
		{"contains", map[string]any{"k": 1}, true, "k", true},
		{"contains", "dev", true, "prod", false},
		{"greaterThan", int64(5), true, int64(3), true},
		{"greaterThan", "5", true, 5, false},
		{"greaterThan", nil, false, 1, false},
		{"lessThan", 2.5, true, 3, true},
		{"greaterThanOrEqual", int64(3), true, 3, true},
		{"lessThanOrEqual", int64(4), true, 3, false},
		{"exists", "", true, nil, true},
		{"exists", nil, true, nil, false},
		{"exists", nil, false, nil, false},
		{"notExists", nil, false, nil, true},
		{"notExists", "x", true, nil, false},
	}
	for _, tc := range tests {
		got, err := Check(tc.op, tc.actual, tc.found, taskconfig.NormalizedCopy(tc.value))
		if err != nil || got != tc.want {
			t.Errorf("Check(%s, %v, %v) = %v, %v; want %v", tc.op, tc.actual, tc.value, got, err, tc.want)
		}
	}
	if _, err := Check("in", "a", true, "a"); err == nil {
		t.Error("in with a scalar value accepted")
	}
	if _, err := Check("greaterThan", 1, true, "big"); err == nil {
		t.Error("greaterThan with a non-number accepted")
	}
	if _, err := Check("bogus", 1, true, 1); err == nil {
		t.Error("unknown operator accepted")
	}
}

func TestParseEvent(t *testing.T) {
	owned := resource.Event{ID: "np1", Kind: "NodePool", Href: "/api/hyperfleet/v1/clusters/c1/nodepools/np1", Generation: 7,
		OwnerReferences: &resource.OwnerReference{ID: "c1", Kind: "Cluster", Href: "/api/hyperfleet/v1/clusters/c1"}}
	tests := []struct {
		name    string
		raw     map[string]any
		want    resource.Event
		wantErr string
	}{
		{name: "CloudEvent carrying it in data",
			raw:  map[string]any{"specversion": "1.0", "id": "ce-id", "type": "t", "data": map[string]any{"id": "abc", "generation": int64(5)}},
			want: resource.Event{ID: "abc", Generation: 5}},
		{name: "bare event with a data field of its own",
			raw:  map[string]any{"id": "abc", "data": map[string]any{"x": 1}},
			want: resource.Event{ID: "abc"}},
		{name: "generation decoded from JSON as a float",
			raw:  map[string]any{"id": "abc", "kind": "Cluster", "generation": 3.0},
			want: resource.Event{ID: "abc", Kind: "Cluster", Generation: 3}},
		{name: "owner references",
			raw: map[string]any{"id": "np1", "kind": "NodePool", "href": owned.Href, "generation": int64(7),
				"owner_references": map[string]any{"id": "c1", "kind": "Cluster", "href": owned.OwnerReferences.Href}},
			want: owned},
		{name: "generation as text", raw: map[string]any{"id": "abc", "generation": "5"}, wantErr: "generation"},
		{name: "fractional generation", raw: map[string]any{"id": "abc", "generation": 1.5}, wantErr: "generation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvent(tc.raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseEvent = %+v, %v; want an error naming %s", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseEvent = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The view params read (event.*) is the event's JSON form, decoded as the
// engine decodes any JSON: a field added to resource.Event shows up here.
func TestEventViewIsTheEventsJSON(t *testing.T) {
	for _, ev := range []resource.Event{
		{ID: "c1", Kind: "Cluster", Href: "/api/hyperfleet/v1/clusters/c1", Generation: 3},
		{ID: "np1", Kind: "NodePool", Generation: 7, OwnerReferences: &resource.OwnerReference{ID: "c9", Kind: "Cluster", Href: "/x"}},
	} {
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonvalue.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventView(ev); !reflect.DeepEqual(got, want) {
			t.Errorf("eventView(%+v) = %#v, want its JSON form %#v", ev, got, want)
		}
	}
}

func TestMetricsPerRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	h := newHarness(t, statusTask, func(o *Options) { o.Metrics = m })
	client, _ := apiclient.New(apiclient.Config{AdapterName: "unit", BaseURL: h.api.srv.URL, Metrics: m})
	h.engine.opts.API = client
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
	if _, _, err := h.run(t, event); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`hyperfleet_adapter_runs_total{adapter_name="unit",outcome="success"}`:                                                                                 1,
		`hyperfleet_adapter_resource_operations_total{adapter_name="unit",operation="create",outcome="ok",transport="kubernetes"}`:                             2,
		`hyperfleet_adapter_api_requests_total{adapter_name="unit",api="hyperfleet",endpoint="/clusters/{clusterId}",method="GET",status_code="200"}`:          1,
		`hyperfleet_adapter_api_requests_total{adapter_name="unit",api="hyperfleet",endpoint="/clusters/{clusterId}/statuses",method="PUT",status_code="201"}`: 1,
	} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(t, reg, `hyperfleet_adapter_phase_duration_seconds_count{adapter_name="unit",outcome="success",phase="resources"}`); got != 1 {
		t.Errorf("resources phase observations = %v", got)
	}
}

// RunEvent owns the order of the phases: a caller learns each as it starts
// and how long it took, and runs none of them itself.
func TestRunEventRunsThePhasesInOrder(t *testing.T) {
	h := newHarness(t, statusTask)
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
	var started []string
	res, err := h.engine.RunEvent(context.Background(), event, func(p phase.Name) { started = append(started, string(p)) })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(started, " "); got != "preconditions resources post" {
		t.Errorf("phases started: %s", got)
	}
	for _, p := range []phase.Name{phase.Preconditions, phase.Resources, phase.Post} {
		if _, ok := res.Took[p]; !ok {
			t.Errorf("no duration for %s: %v", p, res.Took)
		}
	}
	if res.State.Trace.Post.Outcome != phase.Success || !res.Post.Reported {
		t.Errorf("post %s, reported %v: want it reported", res.State.Trace.Post.Outcome, res.Post.Reported)
	}
	h.api.lastPut(t)
}

// metricValue reads one series from a registry in the exposition format.
func metricValue(t *testing.T, reg *prometheus.Registry, series string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		expfmt.MetricFamilyToText(&b, f)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, series+" ") {
			var v float64
			fmt.Sscan(strings.TrimPrefix(line, series+" "), &v)
			return v
		}
	}
	return -1
}

// A worker runs one engine for many resources at once (concurrent
// activities): runs must not share mutable state. Run under -race too
// (make race).
func TestConcurrentRunsOfOneEngine(t *testing.T) {
	h := newHarness(t, statusTask)
	const resources, runs = 8, 15
	for i := range resources {
		id := fmt.Sprintf("c%d", i)
		h.api.objects["/clusters/"+id] = map[string]any{"id": id, "generation": 3, "status": map[string]any{"conditions": []any{}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, resources*runs)
	for i := range resources {
		id := fmt.Sprintf("c%d", i)
		wg.Go(func() {
			for range runs {
				ev := resource.Event{ID: id, Kind: "Cluster", Href: "/api/hyperfleet/v1/clusters/" + id, Generation: 3}
				res, err := h.engine.RunEvent(context.Background(), ev, nil)
				if err != nil || res.State.Meta.ExecutionStatus != phase.ExecutionSucceeded {
					errs <- fmt.Errorf("%s: %v %+v", id, err, res.State.Meta.ExecutionError)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h.api.mu.Lock()
	defer h.api.mu.Unlock()
	if len(h.api.puts) != resources*runs {
		t.Fatalf("%d reports, want %d", len(h.api.puts), resources*runs)
	}
	for _, p := range h.api.puts {
		data, _ := p["data"].(map[string]any)
		if data["missing"] != "fallback" || data["region"] != "eu-west-1" || data["tier"] != "eu" {
			t.Errorf("report data = %v", data)
			break
		}
	}
}

// BenchmarkRun is one full run (params, a precondition GET, two resources
// on the in-memory transport, the status PUT) against a loopback API.
func BenchmarkRun(b *testing.B) {
	h := newHarness(b, statusTask)
	h.api.objects["/clusters/c1"] = map[string]any{"id": "c1", "generation": 3, "status": map[string]any{"conditions": []any{}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.engine.RunEvent(context.Background(), event, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// watchingTransport is a transport that says it watches what it applies.
type watchingTransport struct{ *memory.Transport }

func (watchingTransport) Watches() bool { return true }
