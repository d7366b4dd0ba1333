package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/hyperfleet/hyperfleet/activities"
	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// api is a real HyperFleet API on SQLite.
type api struct {
	url string
	srv *httptest.Server
}

// newAPI registers the validation adapter for clusters, plus any others.
func newAPI(t *testing.T, alsoRegistered ...string) *api {
	t.Helper()
	app, err := apiserver.Build(context.Background(), apiserver.Options{
		Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hf.db")},
		Registered: map[string][]string{resource.KindCluster: append([]string{"validation"}, alsoRegistered...), resource.KindNodePool: {}},
		Logger:     zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(func() { srv.Close(); app.Close() })
	return &api{url: srv.URL, srv: srv}
}

func (a *api) createCluster(t *testing.T, name string) resource.Resource {
	t.Helper()
	resp, err := http.Post(a.url+"/api/hyperfleet/v1/clusters", "application/json",
		strings.NewReader(`{"kind":"Cluster","name":"`+name+`","spec":{"nodes":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r resource.Resource
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create cluster: %d %v", resp.StatusCode, err)
	}
	return r
}

func (a *api) get(t *testing.T, r resource.Resource) resource.Resource {
	t.Helper()
	resp, err := http.Get(a.url + r.Href)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out resource.Resource
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// validation is the shipped validation adapter wired to an API.
func validation(t *testing.T, baseURL string) *activities.Adapter {
	t.Helper()
	dir := filepath.Join("..", "taskconfigs", "validation")
	b, problems := taskconfig.Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), taskconfig.Options{})
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{AdapterName: "validation", BaseURL: baseURL, RetryAttempts: 1, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := executor.New(b, executor.Options{API: client, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return &activities.Adapter{Engine: eng, Logger: zerolog.Nop()}
}

func env(a *activities.Adapter) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet{})
	e := suite.NewTestActivityEnvironment()
	a.Register(e)
	return e
}

func run[T any](t *testing.T, e *testsuite.TestActivityEnvironment, name string, in any) (T, error) {
	t.Helper()
	var out T
	v, err := e.ExecuteActivity(name, in)
	if err != nil {
		return out, err
	}
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func event(r resource.Resource) reconcile.RunInput {
	return reconcile.RunInput{Event: reconcile.Ref{Kind: r.Kind, ID: r.ID}.Event(r.Generation)}
}

func TestRunReportsStatusToTheAPI(t *testing.T) {
	a := newAPI(t)
	c := a.createCluster(t, "activities-1")
	e := env(validation(t, a.url))

	res, err := run[reconcile.RunResult](t, e, reconcile.ActivityRun, event(c))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Summary.Reported || res.Summary.ExecutionStatus != phase.ExecutionSucceeded || res.Summary.Gone || res.Summary.ResourcesSkipped {
		t.Fatalf("run summary = %+v", res.Summary)
	}
	var phases []string
	for _, p := range res.Phases {
		phases = append(phases, string(p.Phase)+"="+string(p.Outcome))
	}
	if got := strings.Join(phases, " "); got != "params=SUCCESS preconditions=SUCCESS resources=SUCCESS post=SUCCESS" {
		t.Errorf("phases = %s", got)
	}
	got := a.get(t, c)
	if ready, _ := got.Condition(resource.ConditionReady); ready.Status != resource.StatusTrue || ready.ObservedGeneration != 1 {
		t.Errorf("Ready after the run = %+v", ready)
	}
}

func TestGoneResourceEndsCleanly(t *testing.T) {
	a := newAPI(t)
	e := env(validation(t, a.url))
	ghost := resource.Resource{Kind: resource.KindCluster, ID: "01a20000-0000-7000-8000-000000000000", Generation: 4}
	res, err := run[reconcile.RunResult](t, e, reconcile.ActivityRun, event(ghost))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Summary.Gone || res.Summary.Reported {
		t.Errorf("summary for a resource the API does not know = %+v, want gone and nothing reported", res.Summary)
	}
}

// rejectingStatuses answers every status report with a 400, as the API
// does for a report it refuses; everything else reaches the real API.
func rejectingStatuses(t *testing.T, api string) string {
	t.Helper()
	target, err := http.NewRequest(http.MethodGet, api, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/statuses") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Bad Request","status":400,"code":"HYPERFLEET-VAL-000","detail":"observed_generation is required"}`))
			return
		}
		u := *r.URL
		u.Scheme, u.Host = target.URL.Scheme, target.URL.Host
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, u.String(), r.Body)
		req.Header = r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRejectedReportIsNotRetried(t *testing.T) {
	a := newAPI(t)
	c := a.createCluster(t, "activities-rej")
	e := env(validation(t, rejectingStatuses(t, a.url)))
	_, err := run[reconcile.RunResult](t, e, reconcile.ActivityRun, event(c))
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != reconcile.ErrRejected || !app.NonRetryable() {
		t.Fatalf("error = %v, want a non-retryable %s", err, reconcile.ErrRejected)
	}
	if !strings.Contains(app.Error(), "observed_generation") {
		t.Errorf("error %q should carry the API's reason", app.Error())
	}
}

func TestUnreachableAPIIsRetried(t *testing.T) {
	a := newAPI(t)
	c := a.createCluster(t, "activities-down")
	e := env(validation(t, a.url))
	a.srv.Close()
	_, err := run[reconcile.RunResult](t, e, reconcile.ActivityRun, event(c))
	if err == nil {
		t.Fatal("run succeeded with the API down")
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		t.Errorf("an unreachable API must be retried, got non-retryable %v", err)
	}
}

func TestMalformedInputIsAConfigError(t *testing.T) {
	e := env(validation(t, "http://127.0.0.1:1"))
	_, err := run[reconcile.RunResult](t, e, reconcile.ActivityRun, reconcile.RunInput{})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != reconcile.ErrConfig || !app.NonRetryable() {
		t.Errorf("run with an event naming no resource: %v, want a non-retryable %s", err, reconcile.ErrConfig)
	}
}

func (a *api) report(t *testing.T, r resource.Resource, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, a.url+r.Href+"/statuses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("report %s: HTTP %d", body, resp.StatusCode)
	}
}

func statusBody(adapter string, generation int64, available string) string {
	return fmt.Sprintf(`{"adapter":%q,"observed_generation":%d,"observed_time":%q,"conditions":[`+
		`{"type":"Available","status":%q},{"type":"Applied","status":"True"},{"type":"Health","status":"True"}]}`,
		adapter, generation, time.Now().UTC().Format(time.RFC3339), available)
}

func TestReadResource(t *testing.T) {
	a := newAPI(t, "landing-zone", "validation-job")
	c := a.createCluster(t, "activities-read")
	client, err := apiclient.New(apiclient.Config{AdapterName: "reconciler", BaseURL: a.url})
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet{})
	e := suite.NewTestActivityEnvironment()
	(&activities.Resources{API: client}).Register(e)

	st, err := run[reconcile.ResourceState](t, e, reconcile.ActivityReadResource, reconcile.Ref{Kind: c.Kind, ID: c.ID})
	if err != nil || st.Gone || st.Reconciled || st.Generation != 1 || st.Reason != "AwaitingAdapters" {
		t.Errorf("fresh cluster = %+v, %v; want generation 1, not reconciled", st, err)
	}
	if len(st.Settled) != 0 {
		t.Errorf("fresh cluster: settled = %v, want none", st.Settled)
	}
	// Two of three adapters done: the cluster is not Reconciled, and the
	// read says which adapters a retry can skip.
	a.report(t, c, statusBody("validation", 1, "True"))
	a.report(t, c, statusBody("landing-zone", 1, "True"))
	a.report(t, c, statusBody("validation-job", 1, "False"))
	st, err = run[reconcile.ResourceState](t, e, reconcile.ActivityReadResource, reconcile.Ref{Kind: c.Kind, ID: c.ID})
	if err != nil || st.Reconciled || fmt.Sprint(st.Settled) != "[landing-zone validation]" {
		t.Errorf("two of three adapters available = %+v, %v; want settled [landing-zone validation]", st, err)
	}
	a.report(t, c, statusBody("validation-job", 1, "True"))
	st, err = run[reconcile.ResourceState](t, e, reconcile.ActivityReadResource, reconcile.Ref{Kind: c.Kind, ID: c.ID})
	if err != nil || !st.Reconciled || st.Settled != nil {
		t.Errorf("every adapter available = %+v, %v; want reconciled (settled is not read then)", st, err)
	}
	st, err = run[reconcile.ResourceState](t, e, reconcile.ActivityReadResource, reconcile.Ref{Kind: resource.KindCluster, ID: "01a20000-0000-7000-8000-000000000000"})
	if err != nil || !st.Gone {
		t.Errorf("unknown cluster = %+v, %v; want gone", st, err)
	}
	a.srv.Close()
	if _, err := run[reconcile.ResourceState](t, e, reconcile.ActivityReadResource, reconcile.Ref{Kind: c.Kind, ID: c.ID}); err == nil {
		t.Error("read with the API down succeeded")
	}
}

func TestSettled(t *testing.T) {
	rep := func(adapter string, gen int64, conds ...string) resource.AdapterStatus {
		r := resource.AdapterStatus{Adapter: adapter, ObservedGeneration: gen}
		for i := 0; i+1 < len(conds); i += 2 {
			r.Conditions = append(r.Conditions, resource.AdapterCondition{Type: conds[i], Status: resource.ConditionStatus(conds[i+1])})
		}
		return r
	}
	live := reconcile.ResourceState{Generation: 2}
	deleting := reconcile.ResourceState{Generation: 3, Deleting: true}
	cases := []struct {
		name    string
		reports []resource.AdapterStatus
		st      reconcile.ResourceState
		want    []string
	}{
		{"available at the generation", []resource.AdapterStatus{rep("b", 2, "Available", "True"), rep("a", 2, "Available", "True")}, live, []string{"a", "b"}},
		{"available at an older generation", []resource.AdapterStatus{rep("a", 1, "Available", "True")}, live, nil},
		{"not available", []resource.AdapterStatus{rep("a", 2, "Available", "False"), rep("b", 2, "Available", "Unknown")}, live, nil},
		{"no Available condition", []resource.AdapterStatus{rep("a", 2, "Health", "True")}, live, nil},
		{"deleting: finalized counts", []resource.AdapterStatus{rep("a", 3, "Available", "False", "Finalized", "True")}, deleting, []string{"a"}},
		{"deleting: available is not enough", []resource.AdapterStatus{rep("a", 3, "Available", "True", "Finalized", "False")}, deleting, nil},
		{"no reports", nil, live, nil},
	}
	for _, c := range cases {
		if got := activities.Settled(c.reports, c.st); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Settled = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStateOf(t *testing.T) {
	now := time.Now()
	cond := func(status resource.ConditionStatus, observed int64) []resource.Condition {
		return []resource.Condition{{Type: resource.ConditionReady, Status: status, Reason: "R", ObservedGeneration: observed}}
	}
	cases := []struct {
		name string
		res  resource.Resource
		want reconcile.ResourceState
	}{
		{"ready at its generation", resource.Resource{Generation: 2, Status: resource.Status{Conditions: cond("True", 2)}},
			reconcile.ResourceState{Generation: 2, Reconciled: true, Reason: "R"}},
		{"ready at an older generation", resource.Resource{Generation: 3, Status: resource.Status{Conditions: cond("True", 2)}},
			reconcile.ResourceState{Generation: 3, Reason: "R"}},
		{"not ready", resource.Resource{Generation: 1, Status: resource.Status{Conditions: cond("False", 1)}},
			reconcile.ResourceState{Generation: 1, Reason: "R"}},
		{"deleting", resource.Resource{Generation: 4, DeletedTime: &now, Status: resource.Status{Conditions: cond("True", 4)}},
			reconcile.ResourceState{Generation: 4, Deleting: true, Reason: "R"}},
		{"no conditions", resource.Resource{Generation: 1}, reconcile.ResourceState{Generation: 1}},
	}
	for _, c := range cases {
		if got := activities.StateOf(&c.res); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: StateOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
