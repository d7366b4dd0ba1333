// Package reconcile tests the whole system end to end through HTTP: the API
// on real PostgreSQL, its outbox relay, the reconcile workflows on a real
// embedded Temporal server, and the shipped adapters applying to a real
// kube-apiserver. Contract section: "Reconciliation".
package reconcile

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/stack"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The adapters every system here runs: the shipped ones.
var (
	clusterAdapters  = []string{"validation", "landing-zone"}
	nodePoolAdapters = []string{"nodepool-validation", "nodepool-config"}
)

// system is one HyperFleet: API + relay + workers on its own Temporal and
// database, sharing the process-wide kube-apiserver.
type system struct {
	t *testing.T
	// temporalAddr is the frontend; the server runs in this process
	// (temporal) or, when options.temporalProcess, in a child process.
	temporalAddr string
	temporal     *embeddedtemporal.Server
	temporalCmd  *exec.Cmd
	tc           client.Client
	stack        *stack.Stack
	temporalDir  string
	kube         *testenv.Kube
	cs           kubernetes.Interface
	url          string
	dbURL        string
	opts         options
}

type options struct {
	reconcile reconcile.Options
	// temporalProcess runs Temporal as a child process (hyperfleet
	// temporal) persisted in a file, so a test can stop and restart it.
	temporalProcess bool
	// noWorkers leaves the reconciler and adapters to the test.
	noWorkers bool
	// adapters overrides the in-process adapters (directories).
	adapters []string
	// registered overrides which adapters each kind runs.
	registered map[string][]string
	// kinds is the API's kinds table; the default kinds when nil.
	kinds *resource.Kinds
}

func defaultOptions() options {
	return options{reconcile: reconcile.Options{
		InitialBackoff:   200 * time.Millisecond,
		MaxBackoff:       2 * time.Second,
		StabilityWindow:  time.Hour,
		HeartbeatTimeout: 5 * time.Second,
	}}
}

func newSystem(t *testing.T, opts options) *system {
	t.Helper()
	kube := testenv.KubeAPI(t)
	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	s := &system{t: t, kube: kube, cs: cs, opts: opts, dbURL: testenv.PostgresDB(t)}
	if opts.temporalProcess {
		s.temporalAddr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		s.temporalDir = t.TempDir()
	}
	s.startTemporal()
	t.Cleanup(s.stopTemporal)

	registered := opts.registered
	if registered == nil {
		registered = map[string][]string{resource.KindCluster: clusterAdapters, resource.KindNodePool: nodePoolAdapters}
	}
	dirs := opts.adapters
	if dirs == nil {
		for _, names := range [][]string{registered[resource.KindCluster], registered[resource.KindNodePool]} {
			for _, n := range names {
				dirs = append(dirs, shipped(n))
			}
		}
	}
	var files []worker.AdapterFiles
	for _, d := range dirs {
		files = append(files, worker.AdapterFiles{Config: filepath.Join(d, "adapter-config.yaml"), TaskConfig: filepath.Join(d, "adapter-task-config.yaml")})
	}
	st, err := stack.Start(context.Background(), stack.Config{
		API: apiserver.Options{
			Server:     apiserver.Config{Listen: "127.0.0.1:0"},
			Store:      store.Config{Driver: store.BackendPostgres, URL: s.dbURL},
			Registered: registered,
			Kinds:      opts.kinds,
			Logger:     testLogger(t),
		},
		Temporal: s.tc, Namespace: "default",
		Reconcile: opts.reconcile,
		Adapters:  files,
		AdapterDeps: worker.AdapterDeps{
			Kube: func() (*rest.Config, error) { return kube.Config, nil },
		},
		NoWorkers: opts.noWorkers,
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stack stopped with: %v", err)
		}
	})
	s.stack, s.url = st, st.URL
	return s
}

// startReconciler hosts the reconcile workflow in this process, for tests
// that run the adapters in worker processes of their own (noWorkers).
func (s *system) startReconciler() {
	s.t.Helper()
	api, err := apiclient.New(apiclient.Config{AdapterName: "reconciler", BaseURL: s.url})
	if err != nil {
		s.t.Fatal(err)
	}
	host, err := worker.Start(worker.Config{Client: s.tc, Reconciler: true, API: api})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(host.Stop)
}

// startTemporal starts (or restarts) the system's Temporal server.
func (s *system) startTemporal() {
	s.t.Helper()
	if s.opts.temporalProcess {
		cmd := exec.Command(testenv.Binary(s.t), "temporal", "--state-dir", s.temporalDir,
			"--port", strings.TrimPrefix(s.temporalAddr, "127.0.0.1:"), "--ui-port", "0", "--log-format", "json")
		if os.Getenv("HYPERFLEET_TEST_LOG") != "" {
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		}
		if err := cmd.Start(); err != nil {
			s.t.Fatal(err)
		}
		s.temporalCmd = cmd
	} else {
		srv, err := embeddedtemporal.Start(embeddedtemporal.Config{SearchAttributes: reconcile.SearchAttributes()})
		if err != nil {
			s.t.Fatalf("embedded Temporal server: %v", err)
		}
		s.temporal, s.temporalAddr = srv, srv.HostPort()
	}
	if s.tc == nil {
		tc, err := client.NewLazyClient(client.Options{HostPort: s.temporalAddr, Namespace: "default", Logger: quietSDK{}})
		if err != nil {
			s.t.Fatal(err)
		}
		s.tc = tc
		s.t.Cleanup(tc.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := temporalclient.WaitReachable(ctx, s.tc, 60*time.Second); err != nil {
		s.t.Fatal(err)
	}
}

// stopTemporal stops the server (a child process is killed outright).
func (s *system) stopTemporal() {
	if s.temporalCmd != nil {
		_ = s.temporalCmd.Process.Kill()
		_, _ = s.temporalCmd.Process.Wait()
		s.temporalCmd = nil
	}
	if s.temporal != nil {
		s.temporal.Stop()
		s.temporal = nil
	}
}

func shipped(name string) string { return filepath.Join("..", "..", "taskconfigs", name) }

// testLogger writes warnings and errors to the test log only when
// HYPERFLEET_TEST_LOG is set (debug for everything).
func testLogger(t *testing.T) zerolog.Logger {
	switch os.Getenv("HYPERFLEET_TEST_LOG") {
	case "":
		return zerolog.Nop()
	case "debug":
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	default:
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Timestamp().Logger()
	}
}

type quietSDK struct{}

func (quietSDK) Debug(string, ...any) {}
func (quietSDK) Info(string, ...any)  {}
func (quietSDK) Warn(string, ...any)  {}
func (quietSDK) Error(string, ...any) {}

// ---- HTTP ----

func (s *system) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+resource.BasePath+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (s *system) mustDo(method, path string, body any, want int) resource.Resource {
	s.t.Helper()
	code, out := s.do(method, path, body)
	if code != want {
		s.t.Fatalf("%s %s = %d, want %d: %s", method, path, code, want, out)
	}
	var r resource.Resource
	if len(out) > 0 {
		_ = json.Unmarshal(out, &r)
	}
	return r
}

func (s *system) createCluster(name string, spec map[string]any) resource.Resource {
	s.t.Helper()
	if spec == nil {
		spec = map[string]any{}
	}
	return s.mustDo(http.MethodPost, "/clusters", map[string]any{"kind": "Cluster", "name": name, "spec": spec}, http.StatusCreated)
}

func (s *system) createNodePool(clusterID, name string, spec map[string]any) resource.Resource {
	s.t.Helper()
	return s.mustDo(http.MethodPost, "/clusters/"+clusterID+"/nodepools", map[string]any{"kind": "NodePool", "name": name, "spec": spec}, http.StatusCreated)
}

func path(r resource.Resource) string { return strings.TrimPrefix(r.Href, resource.BasePath) }

func (s *system) get(r resource.Resource) (resource.Resource, bool) {
	s.t.Helper()
	code, out := s.do(http.MethodGet, path(r), nil)
	if code == http.StatusNotFound {
		return resource.Resource{}, false
	}
	if code != http.StatusOK {
		s.t.Fatalf("GET %s = %d: %s", r.Href, code, out)
	}
	var got resource.Resource
	if err := json.Unmarshal(out, &got); err != nil {
		s.t.Fatal(err)
	}
	return got, true
}

func (s *system) statuses(r resource.Resource) map[string]resource.AdapterStatus {
	s.t.Helper()
	code, out := s.do(http.MethodGet, path(r)+"/statuses", nil)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s/statuses = %d: %s", r.Href, code, out)
	}
	var list resource.List[resource.AdapterStatus]
	if err := json.Unmarshal(out, &list); err != nil {
		s.t.Fatal(err)
	}
	m := map[string]resource.AdapterStatus{}
	for _, st := range list.Items {
		m[st.Adapter] = st
	}
	return m
}

// ready reports whether Ready=True is observed at the resource's current
// generation (the contract's "Reconciled").
func ready(r resource.Resource) bool {
	c, ok := r.Condition(resource.ConditionReady)
	return ok && c.Status == resource.StatusTrue && c.ObservedGeneration == r.Generation
}

func conditionStatus(r resource.Resource, typ string) string {
	c, _ := r.Condition(typ)
	return c.Status
}

// waitReady polls until the resource is Ready at generation gen.
func (s *system) waitReady(r resource.Resource, gen int64, within time.Duration) resource.Resource {
	s.t.Helper()
	var last resource.Resource
	eventually(s.t, within, func() (bool, string) {
		got, ok := s.get(r)
		if !ok {
			return false, "resource is gone"
		}
		last = got
		return got.Generation == gen && ready(got), fmt.Sprintf("generation %d, conditions %s", got.Generation, conditionsOf(got))
	}, func() string { return s.describe(last) })
	return last
}

func (s *system) waitGone(r resource.Resource, within time.Duration) {
	s.t.Helper()
	var last resource.Resource
	eventually(s.t, within, func() (bool, string) {
		got, ok := s.get(r)
		last = got
		return !ok, "still there: " + conditionsOf(got)
	}, func() string { return s.describe(last) })
}

// describe explains a resource that did not get where a test expected:
// its adapter statuses and its workflow's view.
func (s *system) describe(r resource.Resource) string {
	if r.ID == "" {
		return ""
	}
	var b strings.Builder
	for name, st := range s.statuses(r) {
		fmt.Fprintf(&b, "  %s at generation %d:", name, st.ObservedGeneration)
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString("\n")
	}
	if v, err := s.view(r.Kind, r.ID); err == nil {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "  workflow: %s\n", j)
	} else {
		fmt.Fprintf(&b, "  workflow: %v\n", err)
	}
	return b.String()
}

func conditionsOf(r resource.Resource) string {
	var parts []string
	for _, c := range r.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s@%d(%s)", c.Type, c.Status, c.ObservedGeneration, c.Reason))
	}
	return strings.Join(parts, " ")
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, cond func() (bool, string), explain func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			extra := ""
			if explain != nil {
				extra = "\n" + explain()
			}
			t.Fatalf("not within %s: %s%s", within, last, extra)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ---- Temporal ----

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
}

// activityCalls lists the adapter activities a workflow scheduled, in
// order, with the event generation each one acted on.
func activityCalls(t *testing.T, events []*historypb.HistoryEvent) []activityCall {
	t.Helper()
	var out []activityCall
	for _, ev := range events {
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

// ---- Kubernetes ----

func (s *system) namespaceExists(name string) bool {
	s.t.Helper()
	_, err := s.cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return true
}

func (s *system) configMapExists(namespace, name string) bool {
	s.t.Helper()
	_, err := s.cs.CoreV1().ConfigMaps(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return true
}

// process is a hyperfleet binary started by a test, with its output kept
// for the test log on failure.
type process struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	log     syncBuffer
	exited  chan struct{}
	exitErr error
}

// startProcess runs the binary with args; env adds to the environment
// (HYPERFLEET_* of the developer's shell and KUBECONFIG are dropped).
func startProcess(t *testing.T, name string, args []string, env ...string) *process {
	t.Helper()
	p := &process{t: t, name: name, exited: make(chan struct{})}
	p.cmd = exec.Command(testenv.Binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HYPERFLEET_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.log.String())
		}
	})
	return p
}

// failIfExited stops the test when the process died.
func (p *process) failIfExited() {
	p.t.Helper()
	select {
	case <-p.exited:
		p.t.Fatalf("%s exited: %v", p.name, p.exitErr)
	default:
	}
}

// interrupt is Ctrl-C: the process must stop cleanly and promptly.
func (p *process) interrupt() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.exitErr != nil {
			p.t.Errorf("%s exited with %v after Ctrl-C, want 0", p.name, p.exitErr)
		}
	case <-time.After(60 * time.Second):
		p.t.Fatalf("%s did not stop within 60s of Ctrl-C", p.name)
	}
}

func httpGet(url string) (int, []byte) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// waitReadyz waits for a process's /readyz to answer 200.
func waitReadyz(t *testing.T, p *process, base string) {
	t.Helper()
	eventually(t, 90*time.Second, func() (bool, string) {
		p.failIfExited()
		code, body := httpGet(base + "/readyz")
		return code == http.StatusOK, fmt.Sprintf("%s /readyz answered %d %s", p.name, code, body)
	}, nil)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
