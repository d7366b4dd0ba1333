//go:build integration

package reconcile

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// The production topology as separate processes, configured the way an
// operator would: Temporal on its own, `hyperfleet serve` on PostgreSQL
// from HYPERFLEET_* variables, a `hyperfleet worker` hosting the
// reconciler and another hosting two adapters, as the Helm chart deploys
// them (so every adapter run is an activity on its own task queue). A
// cluster created before any worker runs is handed to Temporal and waits
// on its task queue until one polls.
func TestSeparateProcesses(t *testing.T) {
	temporalPort, apiPort, metricsPort, reconcilerMetrics := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	temporalAddr := fmt.Sprintf("127.0.0.1:%d", temporalPort)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)

	temporal := startProcess(t, "hyperfleet temporal", []string{"temporal", "--memory", "--port", fmt.Sprint(temporalPort), "--ui-port", "0", "--log-format", "json"})
	serve := startProcess(t, "hyperfleet serve", []string{"serve"},
		"HYPERFLEET_LISTEN="+fmt.Sprintf("127.0.0.1:%d", apiPort),
		"HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL="+testenv.PostgresDB(t),
		`HYPERFLEET_CLUSTER_ADAPTERS=["validation"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=nodepool-validation",
		"HYPERFLEET_TEMPORAL_ADDRESS="+temporalAddr, "HYPERFLEET_RECONCILE_BACKOFF=200ms",
		"HYPERFLEET_LOG_FORMAT=json")
	waitReadyz(t, serve, api)
	temporal.failIfExited()

	d := &devProcess{process: serve, api: api}
	code, c := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"separate-processes","spec":{"nodes":3}}`)
	if code != http.StatusCreated {
		t.Fatalf("create cluster: HTTP %d", code)
	}
	code, np := d.send(http.MethodPost, "/clusters/"+c.ID+"/nodepools", `{"kind":"NodePool","name":"workers","spec":{"replicas":2}}`)
	if code != http.StatusCreated {
		t.Fatalf("create node pool: HTTP %d", code)
	}

	startProcess(t, "hyperfleet worker --reconciler", []string{"worker", "--temporal-address", temporalAddr, "--reconciler",
		"--api-base-url", api, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", reconcilerMetrics), "--log-format", "json"})
	startProcess(t, "hyperfleet worker (adapters)", []string{"worker", "--temporal-address", temporalAddr,
		"--api-base-url", api, "--adapter-dir", shipped("validation"), "--adapter-dir", shipped("nodepool-validation"),
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--log-format", "json"})

	d.waitCondition(c.ID, hf.ConditionReady, hf.StatusTrue, 1)
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		code, r := d.send(http.MethodGet, "/clusters/"+c.ID+"/nodepools/"+np.ID, "")
		ready, _ := r.Condition(hf.ConditionReady)
		return code == http.StatusOK && ready.Status == hf.StatusTrue, fmt.Sprintf("node pool: HTTP %d, Ready=%s (%s)", code, ready.Status, ready.Message)
	}, nil)

	// Worker versioning works on the embedded server too: the worker (the
	// binary's version as its build id) made itself current, and the
	// workflows are pinned to it.
	out, err := exec.Command(testenv.Binary(t), "versions", "--temporal-address", temporalAddr).CombinedOutput()
	if err != nil {
		t.Fatalf("hyperfleet versions: %v\n%s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 2 || !regexp.MustCompile(`^\S+\s+current\s+[1-9]`).MatchString(lines[1]) {
		t.Errorf("hyperfleet versions printed:\n%s\nwant one current version with the workflows pinned to it", out)
	}
	// Draining a version that does not exist is an error, not "drained:
	// its workers may stop".
	out, err = exec.Command(testenv.Binary(t), "versions", "drain", "no-such-build", "--temporal-address", temporalAddr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "does not exist") {
		t.Errorf("hyperfleet versions drain no-such-build: %v\n%s\nwant an error saying it does not exist", err, out)
	}

	// What an operator watches: the relay's hand-offs on the API, the
	// adapters' runs on the worker.
	_, apiMetrics := httpGet(api + "/metrics")
	if !strings.Contains(string(apiMetrics), `hyperfleet_relay_deliveries_total{outcome="ok"}`) {
		t.Error("the API's /metrics has no successful relay deliveries")
	}
	_, workerMetrics := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	for _, adapter := range []string{"validation", "nodepool-validation"} {
		if !strings.Contains(string(workerMetrics), fmt.Sprintf(`hyperfleet_adapter_runs_total{adapter_name=%q,outcome="success"}`, adapter)) {
			t.Errorf("the worker's /metrics has no successful %s run", adapter)
		}
	}

	// An invalid cluster backs off: every dashboard panel then has data to
	// query, and each metric it queries is exported by the API or the worker.
	if code, _ := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"backs-off","spec":{"nodes":0}}`); code != http.StatusCreated {
		t.Fatalf("create invalid cluster: HTTP %d", code)
	}
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		_, m := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", reconcilerMetrics))
		return strings.Contains(string(m), "hyperfleet_reconcile_backoff_seconds_count"), "no backoff recorded by the reconciler"
	}, nil)
	_, apiMetrics = httpGet(api + "/metrics")
	_, workerMetrics = httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	_, reconcilerOut := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", reconcilerMetrics))
	for _, name := range dashboardMetrics(t) {
		if !exported(string(apiMetrics), name) && !exported(string(workerMetrics), name) && !exported(string(reconcilerOut), name) {
			t.Errorf("the dashboard queries %s, which neither the API nor the workers export", name)
		}
	}

	deliberateRollout(t, temporalAddr, api)

	if code, _ := d.send(http.MethodDelete, "/clusters/"+c.ID, ""); code != http.StatusAccepted {
		t.Fatalf("DELETE: HTTP %d", code)
	}
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		code, _ := d.cluster(c.ID)
		return code == http.StatusNotFound, fmt.Sprintf("GET answered %d", code)
	}, nil)
	serve.interrupt()
}

// deliberateRollout starts a reconciler of another release, which only
// declares its version (--promote first, the default, on an install that
// has a current version), then ramps a share of new
// workflows to it with `hyperfleet versions set-current --ramp`, waiting
// for it to poll: the operator's canary (docs/operator-guide.md,
// "Upgrading"). The current version stays current until `versions
// rollout` (the Helm hook's command) holds at a ramp, then finishes.
func deliberateRollout(t *testing.T, temporalAddr, api string) {
	t.Helper()
	versions := func(args ...string) (string, error) {
		out, err := exec.Command(testenv.Binary(t), append([]string{"versions", "--temporal-address", temporalAddr}, args...)...).CombinedOutput()
		return string(out), err
	}
	before, err := versions()
	if err != nil {
		t.Fatalf("hyperfleet versions: %v\n%s", err, before)
	}
	current := strings.Fields(strings.Split(strings.TrimSpace(before), "\n")[1])[0]
	if out, err := exec.Command(testenv.Binary(t), "worker", "--temporal-address", temporalAddr, "--reconciler",
		"--api-base-url", api, "--metrics-listen", "", "--promote", "sometimes").CombinedOutput(); err == nil || !strings.Contains(string(out), "--promote") {
		t.Errorf("worker --promote sometimes: %v\n%s\nwant a refusal naming --promote", err, out)
	}
	// With --promote at its default (first) a later release's worker
	// only declares its version: promoting it is the operator's step.
	canary := startProcess(t, "hyperfleet worker --reconciler (canary)", []string{"worker", "--temporal-address", temporalAddr, "--reconciler",
		"--api-base-url", api, "--metrics-listen", "", "--log-format", "json", "--build-id", "canary", "--drain-timeout", "10s"})
	await.Eventually(t, 60*time.Second, "the canary's worker to decide not to promote itself", func() (bool, string) {
		return strings.Contains(canary.log.String(), "promotes only a fresh install's version"), "its log says nothing of it yet"
	}, nil)
	if out, err := versions("set-current", "canary", "--ramp", "100"); err == nil || !strings.Contains(out, "--ramp") {
		t.Errorf("set-current --ramp 100: %v\n%s\nwant a refusal naming --ramp", err, out)
	}
	if out, err := versions("set-current", "canary", "--ramp", "25", "--wait", "1m"); err != nil || !strings.Contains(out, "25% of new reconcile workflows") {
		t.Fatalf("set-current canary --ramp 25: %v\n%s", err, out)
	}
	out, err := versions()
	if err != nil || !regexp.MustCompile(`(?m)^canary\s+ramping 25%`).MatchString(out) || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(current)+`\s+current`).MatchString(out) {
		t.Errorf("hyperfleet versions after the ramp: %v\n%s\nwant canary ramping 25%% and %s still current", err, out, current)
	}
	// Setting the current version current again changes nothing.
	if out, err := versions("set-current", current); err != nil || !strings.Contains(out, "current already") {
		t.Errorf("set-current %s (current): %v\n%s", current, err, out)
	}

	// The Helm hook's step (`versions rollout`, Temporal only here): with
	// --ramp and no --ramp-for it moves the ramp and holds there ...
	if out, err := versions("rollout", "canary", "--ramp", "50", "--timeout", "1m"); err != nil || !strings.Contains(out, "holding at the ramp") {
		t.Fatalf("rollout canary --ramp 50: %v\n%s", err, out)
	}
	if out, err := versions(); err != nil || !regexp.MustCompile(`(?m)^canary\s+ramping 50%`).MatchString(out) {
		t.Errorf("hyperfleet versions after rollout --ramp 50: %v\n%s\nwant canary ramping 50%%", err, out)
	}
	// ... and without it finishes: canary current, no ramp left, and the
	// old version's live workflows moved to it (drained), which is what
	// lets the hook delete the old Deployment.
	if out, err := versions("rollout", "canary", "--timeout", "2m"); err != nil || !strings.Contains(out, "canary is rolled out") {
		t.Fatalf("rollout canary: %v\n%s", err, out)
	}
	out, err = versions()
	if err != nil || !regexp.MustCompile(`(?m)^canary\s+current`).MatchString(out) || strings.Contains(out, "ramping") ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(current)+`\s+\S+\s+0\s`).MatchString(out) {
		t.Errorf("hyperfleet versions after rollout canary: %v\n%s\nwant canary current, no ramp, 0 workflows pinned to %s", err, out, current)
	}
	// Run again, it changes nothing and still succeeds (the hook may be
	// retried by Helm).
	if out, err := versions("rollout", "canary", "--timeout", "1m"); err != nil || !strings.Contains(out, "current already") {
		t.Errorf("rollout canary again: %v\n%s", err, out)
	}
}

// `hyperfleet serve` killed (kill -9) right after answering 201, first
// while Temporal is down (the hand-off cannot have happened), then while it
// is up (racing the relay's hand-off). The commit carried the outbox row,
// so the next start delivers every creation, and a hand-off that did
// happen before the kill is not repeated as a second round: each cluster
// has one workflow run and its adapter ran once at generation 1.
func TestAPIKilledAfterCommit(t *testing.T) {
	temporalPort, apiPort := testenv.FreePort(t), testenv.FreePort(t)
	temporalAddr := fmt.Sprintf("127.0.0.1:%d", temporalPort)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	dbURL := testenv.PostgresDB(t)
	serve := func(n int) *devProcess {
		p := startProcess(t, fmt.Sprintf("hyperfleet serve (%d)", n), []string{"serve"},
			"HYPERFLEET_LISTEN="+fmt.Sprintf("127.0.0.1:%d", apiPort),
			"HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL="+dbURL,
			"HYPERFLEET_CLUSTER_ADAPTERS=validation", "HYPERFLEET_NODEPOOL_ADAPTERS=nodepool-validation",
			"HYPERFLEET_TEMPORAL_ADDRESS="+temporalAddr, "HYPERFLEET_LOG_FORMAT=json")
		await.Eventually(t, 90*time.Second, "", func() (bool, string) {
			p.failIfExited()
			code, body := httpGet(api + "/readyz?exclude=workflow-engine")
			return code == http.StatusOK, fmt.Sprintf("/readyz answered %d %s", code, body)
		}, nil)
		return &devProcess{process: p, api: api}
	}
	kill := func(p *devProcess) {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
	}
	var ids []string
	create := func(d *devProcess, name string) {
		code, c := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"`+name+`","spec":{"nodes":3}}`)
		if code != http.StatusCreated {
			t.Fatalf("create %s: HTTP %d", name, code)
		}
		ids = append(ids, c.ID)
	}

	// 1. Temporal is down: the rows stay in the outbox when the API dies.
	first := serve(1)
	for i := 0; i < 3; i++ {
		create(first, fmt.Sprintf("killed-before-handoff-%d", i))
	}
	kill(first)

	// 2. Temporal is up with a worker: the kill races the hand-off.
	startProcess(t, "hyperfleet temporal", []string{"temporal", "--memory", "--port", fmt.Sprint(temporalPort), "--ui-port", "0", "--log-format", "json"})
	startProcess(t, "hyperfleet worker", []string{"worker", "--temporal-address", temporalAddr, "--reconciler",
		"--api-base-url", api, "--adapter-dir", shipped("validation"), "--metrics-listen", "", "--log-format", "json"})
	second := serve(2)
	for i := 0; i < 3; i++ {
		create(second, fmt.Sprintf("killed-during-handoff-%d", i))
	}
	kill(second)

	// 3. The next start delivers what is left.
	third := serve(3)
	for _, id := range ids {
		third.waitCondition(id, hf.ConditionReady, hf.StatusTrue, 1)
	}
	tc, err := client.Dial(client.Options{HostPort: temporalAddr, Namespace: "default", Logger: quietSDK{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	s := &system{t: t, tc: tc}
	for _, id := range ids {
		runs, err := s.findWorkflows(fmt.Sprintf("WorkflowId = '%s'", reconcile.WorkflowID(hf.KindCluster, id)))
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 {
			t.Errorf("cluster %s has %d workflow runs, want 1", id, len(runs))
		}
		runsAtOne := 0
		for _, c := range activityCalls(t, s.history(hf.KindCluster, id)) {
			if c.Activity == reconcile.ActivityRun && c.Generation == 1 {
				runsAtOne++
			}
		}
		if runsAtOne != 1 {
			t.Errorf("cluster %s: validation ran %d times at generation 1, want once", id, runsAtOne)
		}
	}
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM outbox").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0, fmt.Sprintf("%d outbox rows not delivered", n)
	}, nil)
	third.interrupt()
}

// dashboardMetrics lists the metric names the shipped Grafana dashboard's
// panels query.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "hyperfleet", "dashboards", "hyperfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	names := map[string]bool{}
	metric := regexp.MustCompile(`\b(?:hyperfleet|temporal)_[a-z_]+\b`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range metric.FindAllString(tg.Expr, -1) {
				names[n] = true
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("the dashboard queries only %d metrics: %v", len(names), names)
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// exported reports whether a /metrics page has a sample of name (a
// histogram's _bucket, _sum and _count included).
func exported(page, name string) bool {
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			return true
		}
	}
	return false
}
