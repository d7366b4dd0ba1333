//go:build integration

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Upstream's cl-maestro adapter, unchanged, hosted by `hyperfleet worker`
// pointed at a real Maestro server with --maestro-* flags (the file names
// in-cluster addresses), reconciled through Temporal: the cluster becomes
// Ready from the ManifestWork's status feedback, a spec PATCH is patched
// through Maestro and applied by the agent, and DELETE removes the work and
// the applied objects before the cluster goes. Backoff is ten minutes: what
// the agent reports (applied, feedback read, deleted) wakes the workflow
// through the worker's Maestro status watch, so any wait on a timer would
// show. Contract: "what an adapter applied wakes its workflow when it
// changes".
func TestMaestroAdapterThroughTemporal(t *testing.T) {
	compat.Require(t, "upstream's cl-maestro adapter through Temporal and a real Maestro")
	m := testenv.MaestroServer(t)
	m.RegisterConsumer(t, "cluster1")
	opts := defaultOptions()
	opts.noWorkers = true
	opts.registered = map[string][]string{hf.KindCluster: {"cl-maestro"}, hf.KindNodePool: {}}
	opts.reconcile.InitialBackoff, opts.reconcile.MaxBackoff = 10*time.Minute, 10*time.Minute
	s := newSystem(t, opts)
	m.StartAgent(t, "cluster1", s.kube)
	s.startReconciler()
	dir := filepath.Join(compat.Dir(), "upstream-e2e-adapters", "cl-maestro")
	startProcess(t, "hyperfleet worker", []string{"worker", "--log-format", "json",
		"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--adapter-dir", dir, "--metrics-listen", "",
		"--maestro-grpc-server-address", m.GRPCAddr, "--maestro-http-server-address", m.HTTPURL})

	c := s.createCluster("e2e-maestro", map[string]any{"platform": map[string]any{"type": "gcp"}})
	s.waitReady(c, 1, 120*time.Second)
	if f := factsOf(t, s.history(hf.KindCluster, c.ID)); len(f.wakes) == 0 || f.timersFired != 0 {
		t.Errorf("became Ready with %d wake-ups from the Maestro watch and %d timers fired; want wake-ups and no timer\n%s",
			len(f.wakes), f.timersFired, s.timeline(hf.KindCluster, c.ID))
	}
	st := s.statuses(c)["cl-maestro"]
	var data map[string]any
	_ = json.Unmarshal(st.Data, &data)
	if ns, _ := data["namespace"].(map[string]any); ns["phase"] != "Active" {
		t.Errorf("cl-maestro's status data = %v, want the namespace phase Active from status feedback", st.Data)
	}
	ctx := context.Background()
	ns := strings.ToLower(c.ID) + "-cl-maestro-namespace"
	cmName := strings.ToLower(c.ID) + "-cl-maestro-configmap"

	s.mustDo("PATCH", path(c), map[string]any{"spec": map[string]any{"platform": map[string]any{"type": "onprem"}}}, 200)
	s.waitReady(c, 2, 120*time.Second)
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		cm, err := s.cs.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["platform_tier"] == "onprem", fmt.Sprintf("config map applied by the agent: %v", cm.Data)
	}, nil)
	if bundles := m.ResourceBundles(t, "source='cl-maestro'"); len(bundles) != 1 {
		t.Errorf("Maestro holds %d ManifestWorks of cl-maestro after the PATCH, want 1", len(bundles))
	}

	s.mustDo("DELETE", path(c), nil, 202)
	s.waitGone(c, 180*time.Second)
	await.Eventually(t, 90*time.Second, "", func() (bool, string) {
		_, err := s.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s still there: %v", ns, err)
	}, nil)
	if bundles := m.ResourceBundles(t, "source='cl-maestro'"); len(bundles) != 0 {
		t.Errorf("after deletion Maestro holds %d ManifestWorks of cl-maestro", len(bundles))
	}
}

// One adapter with a Kubernetes resource and a Maestro resource side by
// side (upstream runs one transport per process): upstream's cl-maestro
// with a namespace applied directly to the kube-apiserver added in front of
// its ManifestWork. Both are created, the cluster becomes Ready, and both
// are removed on DELETE before the cluster goes.
func TestMixedTransportsInOneAdapter(t *testing.T) {
	compat.Require(t, "an adapter mixing a Kubernetes resource with upstream's cl-maestro ManifestWork")
	m := testenv.MaestroServer(t)
	m.RegisterConsumer(t, "cluster1")
	opts := defaultOptions()
	opts.noWorkers = true
	opts.registered = map[string][]string{hf.KindCluster: {"mixed-transports"}, hf.KindNodePool: {}}
	s := newSystem(t, opts)
	m.StartAgent(t, "cluster1", s.kube)
	s.startReconciler()
	dir := mixedTransportsAdapter(t)
	startProcess(t, "hyperfleet worker", []string{"worker", "--log-format", "json",
		"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--adapter-dir", dir, "--metrics-listen", "",
		"--kubeconfig", s.kube.Kubeconfig,
		"--maestro-grpc-server-address", m.GRPCAddr, "--maestro-http-server-address", m.HTTPURL})

	c := s.createCluster("e2e-mixed", map[string]any{"platform": map[string]any{"type": "gcp"}})
	s.waitReady(c, 1, 120*time.Second)
	ctx := context.Background()
	direct := strings.ToLower(c.ID) + "-direct"
	viaMaestro := strings.ToLower(c.ID) + "-mixed-transports-namespace"
	for _, ns := range []string{direct, viaMaestro} {
		if _, err := s.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
	if bundles := m.ResourceBundles(t, "source='mixed-transports'"); len(bundles) != 1 {
		t.Errorf("Maestro holds %d ManifestWorks of the mixed adapter, want 1", len(bundles))
	}

	s.mustDo("DELETE", path(c), nil, 202)
	s.waitGone(c, 180*time.Second)
	for _, ns := range []string{direct, viaMaestro} {
		await.Eventually(t, 90*time.Second, "", func() (bool, string) {
			_, err := s.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s still there: %v", ns, err)
		}, nil)
	}
}

// mixedTransportsAdapter writes upstream's cl-maestro, renamed, with a
// Kubernetes namespace as its first resource.
func mixedTransportsAdapter(t *testing.T) string {
	t.Helper()
	src := filepath.Join(compat.Dir(), "upstream-e2e-adapters", "cl-maestro")
	dir := filepath.Join(t.TempDir(), "mixed-transports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cfg := read("adapter-config.yaml")
	cfg = strings.Replace(cfg, "name: cl-maestro", "name: mixed-transports", 1)
	cfg = strings.Replace(cfg, `source_id: "cl-maestro"`, `source_id: "mixed-transports"`, 1)
	cfg = strings.Replace(cfg, "clients:\n", "clients:\n  kubernetes:\n    api_version: v1\n", 1)
	task := read("adapter-task-config.yaml")
	task = strings.Replace(task, "resources:\n", `resources:
  - name: "directNamespace"
    transport:
      client: "kubernetes"
    manifest:
      apiVersion: v1
      kind: Namespace
      metadata:
        name: "{{ .clusterId | lower }}-direct"
        annotations:
          hyperfleet.io/generation: "{{ .generation }}"
    discovery:
      by_name: "{{ .clusterId | lower }}-direct"
    lifecycle:
      delete:
        propagationPolicy: Background
        when:
          expression: "is_deleting"
`, 1)
	if !strings.Contains(cfg, "name: mixed-transports") || !strings.Contains(cfg, `source_id: "mixed-transports"`) || !strings.Contains(task, "directNamespace") {
		t.Fatal("cl-maestro changed shape: update mixedTransportsAdapter")
	}
	files := map[string]string{"adapter-config.yaml": cfg, "adapter-task-config.yaml": task,
		"adapter-task-resource-manifestwork.yaml": read("adapter-task-resource-manifestwork.yaml")}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Upstream's failing Maestro adapters, unchanged, through Temporal and a
// real Maestro: each ends with the status its name describes, the workers
// hosting them keep running, and the cluster is never Reconciled.
//   - cl-m-unreg-consumer names a consumer Maestro does not know (with this
//     API's 36-character ids its namespace name is also too long, which
//     Maestro reports first): Health=False naming the consumer.
//   - cl-m-wrong-ds discovers a ManifestWork name it never creates: the
//     work is created, never discovered, so the resources phase fails
//     (Health=False, ExecutionFailed:resources, naming the discovery) and
//     Applied=False.
//   - cl-m-wrong-nest's nested discoveries name manifests the work does
//     not hold: Applied=True, Available=False (NamespaceNotDiscovered).
//   - cl-m-bad-api cannot reach the API (its worker is pointed at a closed
//     port): its ManifestWork is placed, no status is stored, and the
//     workflow's state names the failure.
func TestMaestroFailingAdaptersThroughTemporal(t *testing.T) {
	compat.Require(t, "upstream's failing Maestro adapters (cl-m-*) through Temporal and a real Maestro")
	m := testenv.MaestroServer(t)
	m.RegisterConsumer(t, "cluster1")
	opts := defaultOptions()
	opts.noWorkers = true
	failing := []string{"cl-m-unreg-consumer", "cl-m-wrong-ds", "cl-m-wrong-nest", "cl-m-bad-api"}
	opts.registered = map[string][]string{hf.KindCluster: failing, hf.KindNodePool: {}}
	s := newSystem(t, opts)
	m.StartAgent(t, "cluster1", s.kube)
	s.startReconciler()
	dir := filepath.Join(compat.Dir(), "upstream-e2e-adapters")
	maestroFlags := []string{"--maestro-grpc-server-address", m.GRPCAddr, "--maestro-http-server-address", m.HTTPURL}
	reachable := startProcess(t, "hyperfleet worker (cl-m-unreg-consumer, cl-m-wrong-ds, cl-m-wrong-nest)", append([]string{"worker", "--log-format", "json",
		"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--metrics-listen", "",
		"--adapter-dir", filepath.Join(dir, failing[0]), "--adapter-dir", filepath.Join(dir, failing[1]), "--adapter-dir", filepath.Join(dir, failing[2])},
		maestroFlags...))
	badAPI := startProcess(t, "hyperfleet worker (cl-m-bad-api)", append([]string{"worker", "--log-format", "json",
		"--temporal-address", s.temporalAddr, "--api-base-url", fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "--metrics-listen", "",
		"--adapter-dir", filepath.Join(dir, "cl-m-bad-api")}, maestroFlags...))

	c := s.createCluster("e2e-maestro-failing", map[string]any{})
	conditions := func(st hf.AdapterStatus) map[string]hf.AdapterCondition {
		out := map[string]hf.AdapterCondition{}
		for _, cond := range st.Conditions {
			out[cond.Type] = cond
		}
		return out
	}
	await.Eventually(t, 120*time.Second, "", func() (bool, string) {
		all := s.statuses(c)
		unreg, wrongDS, wrongNest := conditions(all["cl-m-unreg-consumer"]), conditions(all["cl-m-wrong-ds"]), conditions(all["cl-m-wrong-nest"])
		ok := unreg["Health"].Status == hf.StatusFalse && strings.Contains(unreg["Health"].Message, `on consumer "unregistered-consumer"`) &&
			wrongDS["Applied"].Status == hf.StatusFalse && wrongDS["Health"].Status == hf.StatusFalse &&
			wrongDS["Health"].Reason == "ExecutionFailed:resources" && strings.Contains(wrongDS["Health"].Message, "ManifestWork not found") &&
			wrongNest["Applied"].Status == hf.StatusTrue && wrongNest["Available"].Status == hf.StatusFalse &&
			wrongNest["Available"].Reason == "NamespaceNotDiscovered"
		return ok, fmt.Sprintf("cl-m-unreg-consumer %+v\ncl-m-wrong-ds %+v\ncl-m-wrong-nest %+v", unreg, wrongDS, wrongNest)
	}, nil)
	if _, ok := s.statuses(c)["cl-m-bad-api"]; ok {
		t.Error("cl-m-bad-api stored a status although its API address is closed")
	}
	await.Eventually(t, 120*time.Second, "", func() (bool, string) {
		v, err := s.view(hf.KindCluster, c.ID)
		a := v.Adapters["cl-m-bad-api"]
		return err == nil && (a.Outcome == reconcile.OutcomeError || a.Outcome == reconcile.OutcomeFailed),
			fmt.Sprintf("workflow state of cl-m-bad-api: %+v (%v)", a, err)
	}, nil)
	if bundles := m.ResourceBundles(t, "source='cl-m-bad-api'"); len(bundles) != 1 {
		t.Errorf("Maestro holds %d ManifestWorks of cl-m-bad-api, want 1 (its resources phase ran before the failing report)", len(bundles))
	}
	if got, _ := s.get(c); ready(got) {
		t.Error("the cluster is Reconciled although all its adapters fail")
	}
	reachable.failIfExited()
	badAPI.failIfExited()
}

// Maestro down when a cluster is created: upstream's cl-maestro reports
// Health=False naming the cause (the API write of that status succeeds),
// the worker keeps running, and once Maestro is back the cluster becomes
// Ready by itself with exactly one ManifestWork placed.
func TestMaestroOutageThroughTemporal(t *testing.T) {
	compat.Require(t, "upstream's cl-maestro through Temporal while its Maestro server is stopped and started")
	m := testenv.NewMaestro(t)
	m.RegisterConsumer(t, "cluster1")
	opts := defaultOptions()
	opts.noWorkers = true
	opts.registered = map[string][]string{hf.KindCluster: {"cl-maestro"}, hf.KindNodePool: {}}
	s := newSystem(t, opts)
	m.StartAgent(t, "cluster1", s.kube)
	s.startReconciler()
	worker := startProcess(t, "hyperfleet worker", []string{"worker", "--log-format", "json",
		"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--metrics-listen", "",
		"--adapter-dir", filepath.Join(compat.Dir(), "upstream-e2e-adapters", "cl-maestro"),
		"--maestro-grpc-server-address", m.GRPCAddr, "--maestro-http-server-address", m.HTTPURL})

	m.Stop()
	c := s.createCluster("e2e-maestro-outage", map[string]any{"platform": map[string]any{"type": "gcp"}})
	await.Eventually(t, 90*time.Second, "", func() (bool, string) {
		st := s.statuses(c)["cl-maestro"]
		for _, cond := range st.Conditions {
			if cond.Type == "Health" {
				return cond.Status == hf.StatusFalse && strings.Contains(cond.Message, "Maestro is unreachable"), fmt.Sprintf("Health %+v", cond)
			}
		}
		return false, fmt.Sprintf("no Health condition yet: %+v", st)
	}, nil)
	worker.failIfExited()

	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent reconnects on Maestro's own backoff (seen from 2 s to over a
	// minute); the workflow retries on its own.
	s.waitReady(c, 1, 4*time.Minute)
	if bundles := m.ResourceBundles(t, "source='cl-maestro'"); len(bundles) != 1 {
		t.Errorf("Maestro holds %d ManifestWorks of cl-maestro after the outage, want 1 (nothing duplicated)", len(bundles))
	}
	worker.failIfExited()
}
