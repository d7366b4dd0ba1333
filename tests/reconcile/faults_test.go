//go:build integration

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Contract, "Reconciliation": a Reconciled resource is re-run after the
// stability window "so adapters can self-heal deleted resources".
func TestSelfHealingRoundRecreatesDeletedResource(t *testing.T) {
	opts := defaultOptions()
	opts.reconcile.StabilityWindow = 2 * time.Second
	s := newSystem(t, opts)
	c := s.createCluster("e2e-self-heal", nil)
	s.waitReady(c, 1, 60*time.Second)

	if err := s.cs.CoreV1().ConfigMaps(c.ID).Delete(context.Background(), "cluster-info", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		return s.configMapExists(c.ID, "cluster-info"), "cluster-info not re-created"
	}, func() string { return s.describe(c) })
	// No generation bump was needed: the stability-window round did it.
	if got, _ := s.get(c); got.Generation != 1 {
		t.Errorf("generation %d, want 1", got.Generation)
	}
}

// An adapter whose Kubernetes apply fails reports Health=False with the
// error, keeps the resource not Ready, and recovers once the fault is gone.
func TestApplyFailureReportsHealthFalseThenRecovers(t *testing.T) {
	s := newSystem(t, defaultOptions())
	c := s.createCluster("e2e-apply-fault", nil)
	s.waitReady(c, 1, 60*time.Second)
	ctx := context.Background()

	// A quota of zero ConfigMaps refuses every new one in the namespace.
	// No quota controller runs here, so the test fills in its status.
	zero := corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("0")}
	quota, err := s.cs.CoreV1().ResourceQuotas(c.ID).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-configmaps", Namespace: c.ID},
		Spec:       corev1.ResourceQuotaSpec{Hard: zero},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quota.Status = corev1.ResourceQuotaStatus{Hard: zero, Used: zero}
	if _, err := s.cs.CoreV1().ResourceQuotas(c.ID).UpdateStatus(ctx, quota, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota admission plugin reads quotas from an informer: wait until
	// it refuses a ConfigMap (a dry run) before relying on the refusal.
	await.Eventually(t, 30*time.Second, "the quota admission plugin to refuse ConfigMaps", func() (bool, string) {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quota-probe", Namespace: c.ID}}
		_, err := s.cs.CoreV1().ConfigMaps(c.ID).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "quota"), fmt.Sprintf("a dry-run create answered %v", err)
	})
	if err := s.cs.CoreV1().ConfigMaps(c.ID).Delete(ctx, "cluster-info", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.mustDo(http.MethodPatch, path(c), map[string]any{"spec": map[string]any{"nodes": 2}}, http.StatusOK)

	var health hf.AdapterCondition
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		st := s.statuses(c)["landing-zone"]
		for _, cond := range st.Conditions {
			if cond.Type == hf.ConditionHealth {
				health = cond
			}
		}
		return st.ObservedGeneration == 2 && health.Status == hf.StatusFalse, fmt.Sprintf("landing-zone at %d Health=%s", st.ObservedGeneration, health.Status)
	}, func() string { return s.describe(c) })
	if !strings.Contains(health.Message, "quota") || !strings.Contains(health.Message, "clusterConfig") {
		t.Errorf("Health message %q should name the resource and the Kubernetes error", health.Message)
	}
	// Backoff rounds keep failing while the fault lasts.
	await.Eventually(t, 30*time.Second, "backoff rounds while the fault lasts", func() (bool, string) {
		v, err := s.view(hf.KindCluster, c.ID)
		return err == nil && (v.Phase == reconcile.PhaseBackoff || v.Phase == reconcile.PhaseRunning) && v.Round >= 4, fmt.Sprintf("workflow view %+v (%v)", v, err)
	})
	got, _ := s.get(c)
	if ready(got) {
		t.Fatal("Ready=True although landing-zone cannot apply")
	}

	if err := s.cs.CoreV1().ResourceQuotas(c.ID).Delete(ctx, "no-configmaps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitReady(c, 2, 30*time.Second)
	if !s.configMapExists(c.ID, "cluster-info") {
		t.Error("cluster-info not re-created after the fault was removed")
	}
	for _, cond := range s.statuses(c)["landing-zone"].Conditions {
		if cond.Type == hf.ConditionHealth && cond.Status != hf.StatusTrue {
			t.Errorf("Health after recovery = %s (%s)", cond.Status, cond.Message)
		}
	}
}

// Kill the worker in the middle of a round and start a new one: the round
// completes on the new worker and nothing is duplicated.
func TestWorkerKilledMidRound(t *testing.T) {
	opts := defaultOptions()
	opts.noWorkers = true
	opts.registered = map[string][]string{hf.KindCluster: {"validation", "gated-landing-zone"}, hf.KindNodePool: {}}
	s := newSystem(t, opts)

	// The reconciler runs in this process; the adapters in a worker process
	// the test kills.
	s.startReconciler()

	// The gated adapter's precondition blocks on this server until released.
	var hits atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"open":true}`))
	}))
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }); gate.Close() })
	gated := gatedLandingZone(t, gate.URL)

	startWorker := func() *process {
		return startProcess(t, "hyperfleet worker", []string{"worker", "--log-format", "json",
			"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--kubeconfig", s.kube.Kubeconfig,
			"--adapter-dir", shipped("validation"), "--adapter-dir", gated, "--metrics-listen", ""})
	}
	first := startWorker()
	c := s.createCluster("e2e-worker-killed", nil)
	// The worker process starts first: on a loaded machine that alone can
	// take many seconds.
	await.Eventually(t, 90*time.Second, "", func() (bool, string) { return hits.Load() > 0, "the gated adapter never started" }, nil)
	// Heartbeats keep a phase alive past the heartbeat timeout (5s here):
	// it is not retried while its worker lives. Not a wait for a condition:
	// the test proves nothing happens over that time.
	time.Sleep(opts.reconcile.HeartbeatTimeout + 2*time.Second)
	if n := hits.Load(); n != 1 {
		t.Fatalf("the gated precondition was called %d times before the kill: a live activity was retried", n)
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	startWorker()
	releaseOnce.Do(func() { close(release) })

	s.waitReady(c, 1, 60*time.Second)
	if !s.namespaceExists(c.ID) || !s.configMapExists(c.ID, "cluster-info") {
		t.Error("the round did not complete its resources")
	}
	st := s.statuses(c)
	if len(st) != 2 || st["gated-landing-zone"].ObservedGeneration != 1 || st["validation"].ObservedGeneration != 1 {
		t.Errorf("statuses = %+v, want one report per adapter at generation 1", st)
	}
	// One workflow run; the killed adapter run was retried (attempt 2), and
	// each adapter's run completed exactly once.
	events := s.history(hf.KindCluster, c.ID)
	completed := map[string]int{}
	scheduled := map[int64]string{}
	retried := false
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = strings.TrimPrefix(a.GetTaskQueue().GetName(), reconcile.AdapterTaskQueue("")) + "/" + a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			retried = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			completed[scheduled[a.GetScheduledEventId()]]++
		}
	}
	if !retried {
		t.Error("no activity was retried: the worker was not killed mid-activity")
	}
	if len(completed) != 2 {
		t.Errorf("activities completed = %v, want one adapter run per adapter and nothing else", completed)
	}
	for _, a := range []string{"validation", "gated-landing-zone"} {
		if n := completed[a+"/"+reconcile.ActivityRun]; n != 1 {
			t.Errorf("%s completed %d adapter runs, want 1 (completed: %v)", a, n, completed)
		}
	}
	if info := s.describeWorkflow(hf.KindCluster, c.ID); info.RunID == "" {
		t.Error("no workflow run")
	}
	s.recordHistory("cluster-worker-killed", hf.KindCluster, c.ID)
}

// gatedLandingZone writes a copy of the landing-zone adapter named
// gated-landing-zone whose first precondition calls the gate.
func gatedLandingZone(t *testing.T, gateURL string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gated-landing-zone")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(shipped("landing-zone"), "adapter-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	task, err := os.ReadFile(filepath.Join(shipped("landing-zone"), "adapter-task-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgText := strings.Replace(string(cfg), "name: landing-zone", "name: gated-landing-zone", 1)
	taskText := strings.Replace(string(task), "preconditions:\n", fmt.Sprintf(`preconditions:
  - name: gate
    api_call:
      method: GET
      url: %s/gate
      timeout: 60s
`, gateURL), 1)
	if cfgText == string(cfg) || taskText == string(task) {
		t.Fatal("landing-zone changed shape: update gatedLandingZone")
	}
	for name, text := range map[string]string{"adapter-config.yaml": cfgText, "adapter-task-config.yaml": taskText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Stop Temporal while clusters are being created: the API keeps accepting
// and reports the engine unready; every cluster reconciles once it is back.
func TestTemporalOutage(t *testing.T) {
	opts := defaultOptions()
	opts.temporalProcess = true
	s := newSystem(t, opts)
	first := s.createCluster("e2e-outage-0", nil)
	s.waitReady(first, 1, 60*time.Second)

	s.stopTemporal()
	var during []hf.Resource
	for i := 1; i <= 5; i++ {
		during = append(during, s.createCluster(fmt.Sprintf("e2e-outage-%d", i), nil))
	}
	pending, err := s.stack.App.Store.PendingOutbox(context.Background(), 100)
	if err != nil || len(pending) < 5 {
		t.Errorf("outbox during the outage holds %d rows (%v), want the 5 creations waiting", len(pending), err)
	}
	code, body := s.readyz()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"database":"ok"`) || !strings.Contains(body, `"workflow-engine":"unavailable`) {
		t.Errorf("/readyz during the outage = %d %s, want 503 with the database ok and the workflow engine unavailable", code, body)
	}
	s.mustDo(http.MethodPatch, path(first), map[string]any{"spec": map[string]any{"nodes": 5}}, http.StatusOK)
	// The reconciliation of a resource cannot be read without Temporal: a
	// 503 with Retry-After within a bounded time, while reads of the
	// resource itself go on.
	began := time.Now()
	code, out := s.do(http.MethodGet, path(first)+"/reconciliation", nil)
	if took := time.Since(began); code != http.StatusServiceUnavailable || !strings.Contains(string(out), "HYPERFLEET-SVC-004") || took > 10*time.Second {
		t.Errorf("GET reconciliation during the outage = %d %s after %s, want a 503 HYPERFLEET-SVC-004 within seconds", code, out, took)
	}
	if _, ok := s.get(first); !ok {
		t.Error("the cluster cannot be read during the outage")
	}

	s.startTemporal()
	for _, c := range during {
		s.waitReady(c, 1, 90*time.Second)
	}
	s.waitReady(first, 2, 60*time.Second)
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		code, body := s.readyz()
		return code == http.StatusOK, body
	}, nil)
	if pending, _ := s.stack.App.Store.PendingOutbox(context.Background(), 100); len(pending) != 0 {
		t.Errorf("%d outbox rows left after Temporal came back", len(pending))
	}
}

func (s *system) readyz() (int, string) {
	s.t.Helper()
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// The embedded stack (`hyperfleet dev`) on a disk that fills up: writes
// are refused with 507 (or 503) and a message that says the database is
// out of space, never a 500; reads keep working; once space returns the
// same process accepts writes again and reconciles them, Temporal included.
func TestDiskFullOnEmbeddedStack(t *testing.T) {
	state := testenv.Tmpfs(t, 96<<20)
	ports := [3]int{testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)}
	d := startDev(t, state, ports, "")
	spec := `{"platform":{"type":"aws"},"nodes":3,"padding":"` + strings.Repeat("x", 32<<10) + `"}`
	code, before := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"before-full","spec":`+spec+`}`)
	if code != http.StatusCreated {
		t.Fatalf("create before the disk is full: HTTP %d", code)
	}
	d.waitCondition(before.ID, hf.ConditionReady, hf.StatusTrue, 1)

	filler := testenv.Fill(t, state)
	// SQLite may still have room in pages it already holds: write until
	// the disk is what stops it.
	var refused *http.Response
	var refusedBody string
	var accepted []string
	for i := 0; i < 200 && refused == nil; i++ {
		resp, body := d.post("/clusters", `{"kind":"Cluster","name":"while-full-`+fmt.Sprint(i)+`","spec":`+spec+`}`)
		switch resp.StatusCode {
		case http.StatusCreated:
			var c hf.Resource
			_ = json.Unmarshal([]byte(body), &c)
			accepted = append(accepted, c.ID)
		case http.StatusInsufficientStorage, http.StatusServiceUnavailable:
			refused, refusedBody = resp, body
		default:
			t.Fatalf("create on a full disk: HTTP %d %s, want 201 until the disk stops it, then 507 or 503", resp.StatusCode, body)
		}
	}
	if refused == nil {
		t.Fatal("200 creations of 32 KiB specs succeeded on a full disk")
	}
	if ct := refused.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") ||
		!strings.Contains(refusedBody, "HYPERFLEET-SVC-00") || !strings.Contains(refusedBody, "database") {
		t.Errorf("refusal on a full disk = %d %s %s, want problem+json naming the database", refused.StatusCode, ct, refusedBody)
	}
	t.Logf("full disk: %d creations accepted before HTTP %d: %s", len(accepted), refused.StatusCode, refusedBody)
	if code, got := d.cluster(before.ID); code != http.StatusOK || got.ID != before.ID {
		t.Errorf("GET on a full disk: HTTP %d", code)
	}
	d.failIfExited()

	// Space returns: the same process recovers.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var after hf.Resource
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		resp, body := d.post("/clusters", `{"kind":"Cluster","name":"after-full","spec":{"platform":{"type":"aws"},"nodes":3}}`)
		if resp.StatusCode == http.StatusCreated {
			_ = json.Unmarshal([]byte(body), &after)
		}
		return resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusConflict, fmt.Sprintf("create after space returned: HTTP %d %s", resp.StatusCode, body)
	}, nil)
	if after.ID == "" {
		t.Fatal("the create after space returned answered 409 without a 201 first")
	}
	for _, id := range append(accepted, after.ID) {
		d.waitCondition(id, hf.ConditionReady, hf.StatusTrue, 1)
	}
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		code, body := httpGet(d.api + "/readyz")
		return code == http.StatusOK, fmt.Sprintf("/readyz %d %s", code, body)
	}, nil)
	d.interrupt()
}
