//go:build integration

package adapters

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/compat"
)

// Upstream HyperFleet's end-to-end adapters, unchanged, against the real
// kube-apiserver and the real API: the cl-namespace -> cl-job ->
// cl-deployment chain (each waits on the previous one's status), the node
// pool ConfigMap, and the crash / stuck namespaces.
func TestCompatE2EChain(t *testing.T) {
	compat.Require(t, "the upstream end-to-end adapter chain against a real kube-apiserver")
	w := newWorld(t, []string{"cl-namespace", "cl-job", "cl-deployment"}, []string{"np-configmap"})
	ctx := context.Background()
	c := w.createCluster("compat-chain", map[string]any{"platform": map[string]any{"type": "gcp"}})

	nsAdapter := w.adapter(e2eAdapters + "/cl-namespace")
	res := w.run(nsAdapter, c)
	_, conds := reported(t, res, "clusterStatusPayload")
	if ops(res) != "clusterNamespace=CREATE" || !strings.Contains(conds, "Applied=True Available=True Health=True") {
		t.Fatalf("cl-namespace: %s %s\n%s", ops(res), conds, trace(res))
	}
	if exists, phase := w.namespaceExists(c.ID); !exists || phase != "Active" {
		t.Fatalf("namespace %s: %v %s", c.ID, exists, phase)
	}

	// cl-job reads cl-namespace's reported namespace status through
	// /statuses and a JSONPath filter, then creates its Job (manifest.ref
	// /etc/adapter/job.yaml resolved to adapter-task-resource-job.yaml).
	jobAdapter := w.adapter(e2eAdapters + "/cl-job")
	res = w.run(jobAdapter, c)
	if ops(res) != "testJob=CREATE" {
		t.Fatalf("cl-job: %s\n%s", ops(res), trace(res))
	}
	jobName := "test-job-" + c.ID + "-1"
	if _, err := w.cs.BatchV1().Jobs(c.ID).Get(ctx, jobName, metav1.GetOptions{}); err != nil {
		t.Fatalf("job %s: %v", jobName, err)
	}
	_, conds = reported(t, res, "clusterStatusPayload")
	if conds != "Applied=True Available=False Health=True Finalized=False" {
		t.Errorf("cl-job while running: %s", conds)
	}
	if err := w.kube.CompleteJob(ctx, c.ID, jobName, true); err != nil {
		t.Fatal(err)
	}
	res = w.run(jobAdapter, c)
	if _, conds = reported(t, res, "clusterStatusPayload"); conds != "Applied=True Available=True Health=True Finalized=False" {
		t.Errorf("cl-job complete: %s", conds)
	}

	// cl-deployment waits for cl-job's Available condition (a nested
	// JSONPath filter over /statuses).
	depAdapter := w.adapter(e2eAdapters + "/cl-deployment")
	res = w.run(depAdapter, c)
	if ops(res) != "testDeployment=CREATE" {
		t.Fatalf("cl-deployment: %s\n%s", ops(res), trace(res))
	}
	if _, err := w.cs.AppsV1().Deployments(c.ID).Get(ctx, "test-nginx-"+c.ID, metav1.GetOptions{}); err != nil {
		t.Errorf("deployment: %v", err)
	}

	// np-configmap: the node pool adapter of the suite.
	pool := w.createNodePool(c, "np1", map[string]any{"replicas": 2})
	res = w.run(w.adapter(e2eAdapters+"/np-configmap"), pool)
	if ops(res) != "nodepoolConfigMap=CREATE" {
		t.Fatalf("np-configmap: %s\n%s", ops(res), trace(res))
	}
	if cm, err := w.cs.CoreV1().ConfigMaps(c.ID).Get(ctx, "nodepool-config-"+pool.ID, metav1.GetOptions{}); err != nil || cm.Data["nodepool.name"] != "np1" {
		t.Errorf("node pool config map: %v %v", cm, err)
	}

	// Deletion through the chain: each adapter removes what it made.
	c = w.delete(c)
	for _, a := range []struct {
		name string
		op   string
	}{{"cl-deployment", "testDeployment=DELETE"}, {"cl-job", "testJob=DELETE"}} {
		res = w.run(w.adapter(e2eAdapters+"/"+a.name), c)
		if ops(res) != a.op {
			t.Errorf("%s deleting: %s", a.name, ops(res))
		}
		if _, conds = reported(t, res, "clusterStatusPayload"); !strings.HasSuffix(conds, "Finalized=True") {
			t.Errorf("%s deleting: %s", a.name, conds)
		}
	}
}

// cl-crash and cl-stuck create a namespace named after the cluster; the
// kubernetes-example adapter creates a namespace and a Job from a ref.
func TestCompatNamespaceAdapters(t *testing.T) {
	compat.Require(t, "the upstream namespace adapters against a real kube-apiserver")
	w := newWorld(t, []string{"cl-crash", "cl-stuck", "kubernetes-example"}, []string{})
	c := w.createCluster("compat-ns", map[string]any{})
	for _, a := range []struct{ dir, ns, op string }{
		{e2eAdapters + "/cl-crash", c.ID + "-cl-crash", "clusterNamespace=CREATE"},
		{e2eAdapters + "/cl-stuck", c.ID + "-cl-stuck", "clusterNamespace=CREATE"},
		{compat.Path("upstream-adapter-examples", "adapter-kubernetes"), c.ID + "-k8s", "namespace=CREATE helloWorldJob=CREATE"},
	} {
		res := w.run(w.adapter(a.dir), c)
		if ops(res) != a.op {
			t.Errorf("%s: %s\n%s", filepath.Base(a.dir), ops(res), trace(res))
			continue
		}
		if exists, phase := w.namespaceExists(a.ns); !exists || phase != "Active" {
			t.Errorf("%s: namespace %s: %v %s", filepath.Base(a.dir), a.ns, exists, phase)
		}
		for _, p := range res.Post.Payloads {
			if h := conditionOf(p, "Health"); h["status"] != "True" {
				t.Errorf("%s: Health = %v", filepath.Base(a.dir), h)
			}
		}
	}
	if got := condition(w.mustGet(c), "ClCrashSuccessful"); got != "True/NamespaceReady" {
		t.Errorf("ClCrashSuccessful = %s", got)
	}
}

// The dry-run example configs also run for real: dependency-ordered
// deletion, and every CEL pattern of the showcase against the real API.
func TestCompatDryRunConfigsForReal(t *testing.T) {
	compat.Require(t, "the upstream dry-run configs applied for real")
	w := newWorld(t, []string{"dryrun-kubernetes-delete"}, []string{})
	dir := compat.Path("upstream-adapter-examples", "adapter-dryrun")
	c := w.createCluster("compat-dryrun", map[string]any{
		"region": "us-east-1", "provider": "aws", "tags": []any{"production", "ha"},
		"node_pools": []any{map[string]any{"name": "big", "replicas": 5}, map[string]any{"name": "small", "replicas": 1}},
	})
	// This example reports only Health and Finalized; the API requires
	// Available, Applied and Health, so its report is refused with a 400
	// naming the missing conditions, and the engine says so (not retryable).
	del := w.adapterFiles("", filepath.Join(dir, "dryrun-kubernetes-delete-task-config.yaml"))
	runRefused := func() *executor.Result {
		t.Helper()
		res, err := del.Run(context.Background(), eventFor(c))
		if err == nil || res.Post.Retryable || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "conditions") {
			t.Fatalf("report of an example without mandatory conditions: %v (retryable %v)", err, res.Post.Retryable)
		}
		return res
	}
	// It lists its ConfigMap before the Namespace the ConfigMap lives in:
	// on a real cluster the first apply fails and names the cause...
	res := runRefused()
	if step := res.State.Trace.Resources.Steps[0]; ops(res) != "configmap0=CREATE" || !strings.Contains(step.Error, `namespaces "`+c.ID+`" not found`) {
		t.Fatalf("create without the namespace: %s %s", ops(res), step.Error)
	}
	// ... and with the namespace in place (made by another adapter) it
	// converges.
	if _, err := w.k8s.Create(context.Background(), "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": c.ID}}); err != nil {
		t.Fatal(err)
	}
	res = runRefused()
	if ops(res) != "configmap0=CREATE namespace0=UPDATE" {
		t.Fatalf("create: %s\n%s", ops(res), trace(res))
	}
	show := w.adapterFiles("", filepath.Join(dir, "dryrun-cel-showcase-task-config.yaml"))
	res = w.run(show, c)
	p, conds := reported(t, res, "statusPayload")
	if conds != "Applied=True Available=True Health=True Finalized=False" {
		t.Errorf("showcase: %s\n%s", conds, trace(res))
	}
	lists := p["data"].(map[string]any)["lists"].(map[string]any)
	if lists["first_pool"] != "big" || lists["pools_by_replicas"] != `["small","big"]` {
		t.Errorf("showcase lists = %v", lists)
	}

	c = w.delete(c)
	res = runRefused()
	if ops(res) != "configmap0=DELETE namespace0=DELETE" {
		t.Errorf("delete: %s", ops(res))
	}
	await.True(t, 60*time.Second, "namespace removed", func() bool {
		exists, _ := w.namespaceExists(c.ID)
		return !exists
	})
	res = runRefused()
	if _, conds := reported(t, res, "statusPayload"); conds != "Health=True Finalized=True" {
		t.Errorf("after cleanup: %s", conds)
	}
}

// An apply the API server rejects: the phase stops, adapter.* names the
// failure, and the status reports Health=False with the server's message.
func TestApplyFailureIsReported(t *testing.T) {
	compat.Require(t, "that an upstream adapter whose apply fails reports it")
	w := newWorld(t, []string{"cl-invalid-resource"}, []string{})
	c := w.createCluster("compat-invalid", map[string]any{})
	// cl-invalid-resource writes into the cluster's namespace.
	w.run(w.adapter(e2eAdapters+"/cl-namespace"), c)
	res := w.run(w.adapter(e2eAdapters+"/cl-invalid-resource"), c)
	step := res.State.Trace.Resources.Steps[0]
	if step.Operation != "CREATE" || !strings.Contains(step.Error, `ConfigMap "INVALID-NAME-`+c.ID+`" is invalid`) || !strings.Contains(step.Error, "HTTP 422 Invalid") {
		t.Fatalf("step = %+v", step)
	}
	meta := res.State.Meta
	if meta.ExecutionStatus != "failed" || meta.ExecutionError == nil || meta.ExecutionError.Phase != "resources" || meta.ExecutionError.Step != "invalidConfigMap" ||
		meta.ResourceErrors["invalidConfigMap"].Message != step.Error {
		t.Errorf("adapter context = %+v", meta)
	}
	p, _ := reported(t, res, "clusterStatusPayload")
	health := conditionOf(p, "Health")
	if health["status"] != "False" || !strings.Contains(health["message"].(string), "is invalid") {
		t.Errorf("Health = %v", health)
	}
	got := w.mustGet(c)
	if cond := condition(got, "ClInvalidResourceSuccessful"); cond != "False/"+conditionOf(p, "Available")["reason"].(string) {
		t.Errorf("ClInvalidResourceSuccessful = %s", cond)
	}
}

// A precondition whose API is unreachable: the run fails at preconditions
// and reports Health=False naming the unreachable host.
func TestPreconditionErrorIsReported(t *testing.T) {
	compat.Require(t, "that an upstream adapter whose precondition errors reports it")
	w := newWorld(t, []string{"cl-precondition-error"}, []string{})
	c := w.createCluster("compat-precond", map[string]any{})
	res := w.run(w.adapter(e2eAdapters+"/cl-precondition-error"), c)
	meta := res.State.Meta
	if meta.ExecutionError == nil || meta.ExecutionError.Phase != "preconditions" || !strings.Contains(meta.ExecutionError.Message, "invalid-service") {
		t.Fatalf("adapter context = %+v", meta)
	}
	p, conds := reported(t, res, "clusterStatusPayload")
	if conds != "Applied=False Available=False Health=False" {
		t.Errorf("conditions = %s", conds)
	}
	want := map[string]any{"type": "Health", "status": "False", "reason": "ExecutionFailed", "message": meta.ExecutionError.Message}
	if !reflect.DeepEqual(conditionOf(p, "Health"), want) {
		t.Errorf("Health = %v, want %v", conditionOf(p, "Health"), want)
	}
}
