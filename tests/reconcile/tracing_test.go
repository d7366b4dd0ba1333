//go:build integration

package reconcile

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// otlpReceiver is an OTLP/gRPC trace collector in the test process: it
// keeps every span the system exports.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*span
}

// span is an exported span with what the assertions read.
type span struct {
	name, service     string
	trace, id, parent string
	attrs             map[string]string
}

func (s *span) String() string {
	return fmt.Sprintf("%s [%s] span %s parent %s %v", s.name, s.service, s.id, s.parent, s.attrs)
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, spanOf(service, sp))
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func spanOf(service string, sp *tracepb.Span) *span {
	return &span{name: sp.GetName(), service: service, trace: hex.EncodeToString(sp.GetTraceId()),
		id: hex.EncodeToString(sp.GetSpanId()), parent: hex.EncodeToString(sp.GetParentSpanId()), attrs: attrMap(sp.GetAttributes())}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		default:
			out[kv.GetKey()] = v.GetStringValue()
		}
	}
	return out
}

func (r *otlpReceiver) snapshot() []*span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*span(nil), r.spans...)
}

func startOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r, "http://" + ln.Addr().String()
}

// One create is one trace, against the real binary (`hyperfleet dev`: its
// embedded Temporal, the shipped validation and landing-zone adapters on a
// real kube-apiserver), exported over OTLP to a receiver in this test:
// the POST's span -> the outbox hand-off -> the workflow start -> the
// workflow -> each adapter's activity -> its phases -> the Kubernetes
// calls and the status report, whose API span closes the loop. Every
// parent of the trace is itself exported, so the tree has no gap, and the
// resource's id, kind and generation and the adapter are on the spans.
func TestOneCreateIsOneTrace(t *testing.T) {
	receiver, endpoint := startOTLPReceiver(t)
	kube := testenv.KubeAPI(t)
	ports := [3]int{testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)}
	args := []string{"dev", "--state-dir", t.TempDir(), "--log-format", "json",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--temporal-port", fmt.Sprint(ports[1]), "--ui-port", "0",
		"--kubeconfig", kube.Kubeconfig, "--cluster-adapters", "validation,landing-zone"}
	d := &devProcess{process: startProcess(t, "hyperfleet dev", args, "HYPERFLEET_OTEL_ENDPOINT="+endpoint),
		api: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	waitReadyz(t, d.process, d.api)
	if !strings.Contains(d.log.String(), "tracing on") {
		t.Errorf("the log does not say tracing is on")
	}
	// The banner says so too, and where the settings are documented.
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		log := d.log.String()
		return strings.Contains(log, "Tracing: on") && strings.Contains(log, `docs/operator-guide.md, "Tracing"`),
			"the start-up banner does not say tracing is on and where it is documented"
	}, nil)

	code, c := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"traced","spec":{"platform":{"type":"aws"},"nodes":3}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: HTTP %d", code)
	}
	d.waitCondition(c.ID, hf.ConditionReady, hf.StatusTrue, 1)
	d.waitCondition(c.ID, "LandingZoneSuccessful", hf.StatusTrue, 1)
	// The workflow's own span ends with the workflow: delete the cluster so
	// it finishes, then stop the process, which flushes what is buffered.
	if code, _ := d.send(http.MethodDelete, "/clusters/"+c.ID, ""); code != http.StatusAccepted {
		t.Fatalf("DELETE: HTTP %d", code)
	}
	await.Eventually(t, 90*time.Second, "", func() (bool, string) {
		code, _ := d.cluster(c.ID)
		return code == http.StatusNotFound, fmt.Sprintf("GET answered %d", code)
	}, nil)
	// The API answers 404 as soon as the last report removes the cluster;
	// the workflow finishes (and ends its span) a moment later. Stopping
	// the process in between lost that span.
	tc, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", ports[1]), Namespace: "default", Logger: quietSDK{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	(&system{t: t, tc: tc}).waitClosed(hf.KindCluster, c.ID)
	d.interrupt()

	all := receiver.snapshot()
	var create *span
	for _, s := range all {
		if s.name == "POST /api/hyperfleet/v1/clusters" && s.attrs["hyperfleet.resource.id"] == c.ID {
			create = s
		}
	}
	if create == nil {
		t.Fatalf("no span of the create's POST among %d spans:\n%s", len(all), dump(all))
	}
	if create.parent != "" {
		t.Errorf("the POST's span has parent %s, want it to start the trace", create.parent)
	}
	wantAttrs(t, create, map[string]string{"hyperfleet.resource.kind": hf.KindCluster, "hyperfleet.resource.generation": "1", "http.response.status_code": "201"})

	byID := map[string]*span{}
	var trace []*span
	for _, s := range all {
		if s.trace == create.trace {
			byID[s.id] = s
			trace = append(trace, s)
		}
	}
	// No gap: every span's parent is in the trace, up to the POST.
	for _, s := range trace {
		if s != create && byID[s.parent] == nil {
			t.Errorf("span %s: its parent %s was never exported (the tree is broken there)", s, s.parent)
		}
	}
	if t.Failed() {
		t.Fatalf("the trace:\n%s", dump(trace))
	}
	t.Logf("the create's trace, %d spans:\n%s", len(trace), dump(trace))
	under := func(s *span) []string {
		var chain []string
		for p := byID[s.parent]; p != nil; p = byID[p.parent] {
			chain = append(chain, p.name)
		}
		return chain
	}
	find := func(what string, match func(*span) bool) []*span {
		var out []*span
		for _, s := range trace {
			if match(s) {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			t.Fatalf("no %s in the create's trace:\n%s", what, dump(trace))
		}
		return out
	}

	deliver := find("outbox hand-off", func(s *span) bool { return s.name == "outbox.deliver" })[0]
	if deliver.parent != create.id {
		t.Errorf("the outbox hand-off's parent is %v, want the POST's span", byID[deliver.parent])
	}
	wantAttrs(t, deliver, map[string]string{"hyperfleet.resource.id": c.ID, "hyperfleet.resource.kind": hf.KindCluster, "hyperfleet.resource.generation": "1"})
	start := find("workflow start", func(s *span) bool { return strings.HasPrefix(s.name, "SignalWithStartWorkflow:") })[0]
	if start.parent != deliver.id {
		t.Errorf("the workflow start's parent is %v, want the outbox hand-off", byID[start.parent])
	}
	run := find("workflow run", func(s *span) bool { return s.name == "RunWorkflow:"+reconcile.WorkflowName })[0]
	if run.parent != start.id {
		t.Errorf("the workflow's parent is %v, want its start", byID[run.parent])
	}

	for _, adapter := range []string{"validation", "landing-zone"} {
		activity := find(adapter+" activity", func(s *span) bool {
			return s.name == "RunActivity:"+reconcile.ActivityRun && s.attrs["hyperfleet.adapter"] == adapter &&
				s.attrs["hyperfleet.resource.generation"] == "1"
		})[0]
		wantAttrs(t, activity, map[string]string{"hyperfleet.resource.id": c.ID, "hyperfleet.resource.kind": hf.KindCluster})
		if chain := under(activity); !containsAll(chain, "RunWorkflow:"+reconcile.WorkflowName, "outbox.deliver", create.name) {
			t.Errorf("%s activity sits under %v, want the workflow, the hand-off and the POST", adapter, chain)
		}
		phases := map[string]*span{}
		for _, phase := range []string{"preconditions", "resources", "post"} {
			p := find(adapter+" "+phase+" phase", func(s *span) bool {
				return s.name == "adapter."+phase && s.parent == activity.id
			})[0]
			wantAttrs(t, p, map[string]string{"hyperfleet.adapter": adapter, "hyperfleet.resource.id": c.ID, "hyperfleet.resource.generation": "1"})
			phases[phase] = p
		}
		// The status report: the adapter's client span under its post
		// phase, and the API's span of the PUT under that.
		put := find(adapter+" status report", func(s *span) bool {
			return strings.HasPrefix(s.name, "HTTP PUT ") && strings.HasSuffix(s.name, "/statuses") && s.parent == phases["post"].id
		})[0]
		served := find("the API's span of "+adapter+"'s report", func(s *span) bool {
			return s.name == "PUT /api/hyperfleet/v1/clusters/:cluster_id/statuses" && s.parent == put.id
		})[0]
		wantAttrs(t, served, map[string]string{"hyperfleet.resource.id": c.ID, "http.response.status_code": "201"})
		if adapter == "landing-zone" {
			find("Kubernetes call of the resources phase", func(s *span) bool {
				return strings.HasPrefix(s.name, "HTTP ") && strings.Contains(s.name, "/namespaces") && s.parent == phases["resources"].id
			})
		}
	}
}

func wantAttrs(t *testing.T, s *span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if s.attrs[k] != v {
			t.Errorf("span %q: %s = %q, want %q", s.name, k, s.attrs[k], v)
		}
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func dump(spans []*span) string {
	lines := make([]string, 0, len(spans))
	for _, s := range spans {
		lines = append(lines, "  "+s.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
