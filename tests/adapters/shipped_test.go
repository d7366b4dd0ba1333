//go:build integration

package adapters

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/internal/await"
)

// The landing zone's whole life: create, skip on the same generation, update
// on a new one, self-heal a resource deleted behind its back, delete in
// order across runs, and the API removing the cluster once Finalized.
func TestLandingZoneLifecycle(t *testing.T) {
	w := newWorld(t, []string{"landing-zone"}, []string{})
	lz := w.adapter(shipped + "/landing-zone")
	ctx := context.Background()
	c := w.createCluster("lz-lifecycle", map[string]any{"platform": map[string]any{"type": "gcp"}})

	res := w.run(lz, c)
	if got := ops(res); got != "clusterNamespace=CREATE clusterConfig=CREATE" {
		t.Fatalf("first run: %s\n%s", got, trace(res))
	}
	p, _ := reported(t, res, "clusterStatusPayload")
	want := map[string]any{
		"adapter":             "landing-zone",
		"observed_generation": int64(1),
		"observed_time":       w.now.Format(time.RFC3339),
		"conditions": []any{
			map[string]any{"type": "Applied", "status": "True", "reason": "ResourcesApplied", "message": "Namespace " + c.ID + " and its cluster-info ConfigMap are applied"},
			map[string]any{"type": "Available", "status": "True", "reason": "NamespaceActive", "message": "Namespace phase: Active"},
			map[string]any{"type": "Health", "status": "True", "reason": "Healthy", "message": "Adapter execution completed successfully"},
			map[string]any{"type": "Finalized", "status": "False", "reason": "NotDeleting", "message": "No pending deletion"},
		},
		"data": map[string]any{"namespace": map[string]any{"name": c.ID, "status": "Active"}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("payload\n got %#v\nwant %#v", p, want)
	}
	cm, err := w.cs.CoreV1().ConfigMaps(c.ID).Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil || cm.Data["cluster_name"] != "lz-lifecycle" || cm.Data["platform"] != "gcp" || cm.Annotations["hyperfleet.io/generation"] != "1" {
		t.Fatalf("config map = %+v, %v", cm, err)
	}
	if got := condition(w.mustGet(c), "Ready"); got != "True/ResourceReady" {
		t.Errorf("cluster Ready = %s", got)
	}

	// Same generation: nothing to do.
	if got := ops(w.run(lz, c)); got != "clusterNamespace=SKIP clusterConfig=SKIP" {
		t.Errorf("same generation: %s", got)
	}

	// A spec change: both are updated to generation 2.
	c = w.patch(c, `{"spec":{"platform":{"type":"aws"}}}`)
	if got := ops(w.run(lz, c)); got != "clusterNamespace=UPDATE clusterConfig=UPDATE" {
		t.Errorf("new generation: %s", got)
	}
	cm, _ = w.cs.CoreV1().ConfigMaps(c.ID).Get(ctx, "cluster-info", metav1.GetOptions{})
	if cm.Data["platform"] != "aws" || cm.Annotations["hyperfleet.io/generation"] != "2" {
		t.Errorf("updated config map = %v %v", cm.Data, cm.Annotations)
	}

	// Self-healing: the config map deleted behind the adapter's back.
	if err := w.cs.CoreV1().ConfigMaps(c.ID).Delete(ctx, "cluster-info", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := ops(w.run(lz, c)); got != "clusterNamespace=SKIP clusterConfig=CREATE" {
		t.Errorf("self-heal: %s", got)
	}

	// Deletion, across runs: first the config map goes while the namespace
	// waits for it; then the namespace; the namespace controller finishes
	// it; a last run confirms, reports Finalized, and the API removes the
	// cluster.
	c = w.delete(c)
	res = w.run(lz, c)
	if got := ops(res); got != "clusterNamespace=UPDATE clusterConfig=DELETE" {
		t.Errorf("deletion, first run: %s", got)
	}
	if _, conds := reported(t, res, "clusterStatusPayload"); conds != "Applied=False Available=False Health=True Finalized=False" {
		t.Errorf("deletion, first run: %s", conds)
	}
	res = w.run(lz, c)
	if got := ops(res); got != "clusterNamespace=DELETE clusterConfig=ABSENT" {
		t.Errorf("deletion, second run: %s", got)
	}
	if _, err := w.cs.CoreV1().ConfigMaps(c.ID).Get(ctx, "cluster-info", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map survived: %v", err)
	}
	await.True(t, 60*time.Second, "namespace removed by the namespace controller", func() bool {
		exists, _ := w.namespaceExists(c.ID)
		return !exists
	})
	// When the namespace controller was faster than the rediscovery, the
	// second run already confirmed the cleanup; otherwise this one does.
	if _, stillThere := w.get(c); stillThere {
		res = w.run(lz, c)
	}
	p, conds := reported(t, res, "clusterStatusPayload")
	if conds != "Applied=False Available=False Health=True Finalized=True" || conditionOf(p, "Finalized")["reason"] != "CleanupConfirmed" {
		t.Errorf("after cleanup: %s %v", conds, conditionOf(p, "Finalized"))
	}
	if _, ok := w.get(c); ok {
		t.Error("the API kept the cluster after its only adapter finalized")
	}
	// The next round finds the cluster gone and ends cleanly.
	res = w.run(lz, c)
	if !res.State.Gone || res.Post.Reported {
		t.Errorf("round after removal: gone %v reported %v", res.State.Gone, res.Post.Reported)
	}
}

// The validation Job: created once the landing zone is up, Unknown while it
// runs, True when Complete, recreated for a new generation, False with the
// reason when it fails.
func TestValidationJob(t *testing.T) {
	w := newWorld(t, []string{"landing-zone", "validation-job"}, []string{})
	lz, vj := w.adapter(shipped+"/landing-zone"), w.adapter(shipped+"/validation-job")
	ctx := context.Background()
	c := w.createCluster("vj-cluster", map[string]any{})

	// Before the landing zone: resources skipped, nothing created.
	res := w.run(vj, c)
	if !res.State.Meta.ResourcesSkipped {
		t.Fatalf("ran before the landing zone:\n%s", trace(res))
	}
	_, conds := reported(t, res, "clusterStatusPayload")
	if conds != "Applied=False Available=Unknown Health=True Finalized=False" {
		t.Errorf("waiting: %s", conds)
	}

	w.run(lz, c)
	res = w.run(vj, c)
	if got := ops(res); got != "validationJob=CREATE" {
		t.Fatalf("job: %s\n%s", got, trace(res))
	}
	job, err := w.cs.BatchV1().Jobs(c.ID).Get(ctx, "cluster-validation", metav1.GetOptions{})
	if err != nil || job.Annotations["hyperfleet.io/generation"] != "1" {
		t.Fatalf("job = %v, %v", job, err)
	}
	_, conds = reported(t, res, "clusterStatusPayload")
	if conds != "Applied=True Available=Unknown Health=True Finalized=False" {
		t.Errorf("running: %s", conds)
	}

	if err := w.kube.CompleteJob(ctx, c.ID, "cluster-validation", true); err != nil {
		t.Fatal(err)
	}
	res = w.run(vj, c)
	p, conds := reported(t, res, "clusterStatusPayload")
	if ops(res) != "validationJob=SKIP" || conds != "Applied=True Available=True Health=True Finalized=False" || conditionOf(p, "Available")["reason"] != "JobComplete" {
		t.Errorf("complete: %s %s", ops(res), conds)
	}
	if got := condition(w.mustGet(c), "Ready"); got != "True/ResourceReady" {
		t.Errorf("cluster Ready = %s", got)
	}

	// A new generation recreates the Job (its spec is immutable).
	oldUID := job.UID
	c = w.patch(c, `{"spec":{"nodes":3}}`)
	w.run(lz, c)
	res = w.run(vj, c)
	if got := ops(res); got != "validationJob=RECREATE" {
		t.Errorf("new generation: %s\n%s", got, trace(res))
	}
	job, _ = w.cs.BatchV1().Jobs(c.ID).Get(ctx, "cluster-validation", metav1.GetOptions{})
	if job.UID == oldUID || job.Annotations["hyperfleet.io/generation"] != "2" {
		t.Errorf("job was not recreated: uid %s gen %s", job.UID, job.Annotations["hyperfleet.io/generation"])
	}
	if err := w.kube.CompleteJob(ctx, c.ID, "cluster-validation", false); err != nil {
		t.Fatal(err)
	}
	res = w.run(vj, c)
	p, conds = reported(t, res, "clusterStatusPayload")
	if conds != "Applied=True Available=False Health=True Finalized=False" ||
		conditionOf(p, "Available")["message"] != "Validation failed: Job has reached the specified backoff limit" {
		t.Errorf("failed: %s %v", conds, conditionOf(p, "Available"))
	}
}

// The node pool adapter waits for its cluster's landing zone, then keeps a
// ConfigMap per node pool, and removes it when the node pool is deleted.
func TestNodePoolConfig(t *testing.T) {
	w := newWorld(t, []string{"landing-zone"}, []string{"nodepool-config"})
	lz, np := w.adapter(shipped+"/landing-zone"), w.adapter(shipped+"/nodepool-config")
	ctx := context.Background()
	c := w.createCluster("np-cluster", map[string]any{})
	pool := w.createNodePool(c, "workers", map[string]any{"replicas": 3, "machineType": "n2-standard-8"})

	res := w.run(np, pool)
	if !res.State.Meta.ResourcesSkipped || res.State.Meta.SkipReason == "" {
		t.Fatalf("did not wait for the landing zone:\n%s", trace(res))
	}
	w.run(lz, c)
	res = w.run(np, pool)
	if got := ops(res); got != "nodepoolConfigMap=CREATE" {
		t.Fatalf("node pool: %s\n%s", got, trace(res))
	}
	cm, err := w.cs.CoreV1().ConfigMaps(c.ID).Get(ctx, "nodepool-"+pool.ID, metav1.GetOptions{})
	if err != nil || cm.Data["replicas"] != "3" || cm.Data["machine_type"] != "n2-standard-8" || cm.Data["nodepool_name"] != "workers" {
		t.Fatalf("config map = %v, %v", cm, err)
	}
	if got := condition(w.mustGet(pool), "Ready"); got != "True/ResourceReady" {
		t.Errorf("node pool Ready = %s", got)
	}

	pool = w.delete(pool)
	res = w.run(np, pool)
	_, conds := reported(t, res, "nodepoolStatusPayload")
	if ops(res) != "nodepoolConfigMap=DELETE" || conds != "Applied=False Available=False Health=True Finalized=True" {
		t.Errorf("deletion: %s %s", ops(res), conds)
	}
	if _, ok := w.get(pool); ok {
		t.Error("the API kept the finalized node pool")
	}
	if _, err := w.cs.CoreV1().ConfigMaps(c.ID).Get(ctx, "nodepool-"+pool.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map survived: %v", err)
	}
}

// The validation adapter needs no cluster: it reads the spec and reports.
func TestValidationAdapter(t *testing.T) {
	w := newWorld(t, []string{"validation"}, []string{})
	v := w.adapter(shipped + "/validation")
	good := w.createCluster("valid-spec", map[string]any{"platform": map[string]any{"type": "gcp"}, "release": map[string]any{"version": "4.17.2"}})
	bad := w.createCluster("invalid-spec", map[string]any{"platform": map[string]any{"type": "mainframe"}})

	_, conds := reported(t, w.run(v, good), "clusterStatusPayload")
	if conds != "Applied=True Available=True Health=True Finalized=False" {
		t.Errorf("valid spec: %s", conds)
	}
	if got := condition(w.mustGet(good), "ValidationSuccessful"); got != "True/SpecValid" {
		t.Errorf("ValidationSuccessful = %s", got)
	}
	p, conds := reported(t, w.run(v, bad), "clusterStatusPayload")
	if conds != "Applied=True Available=False Health=True Finalized=False" ||
		conditionOf(p, "Available")["message"] != "spec.platform.type must be one of gcp, aws, azure, baremetal, none (got mainframe)" {
		t.Errorf("invalid spec: %s %v", conds, conditionOf(p, "Available"))
	}
	if got := condition(w.mustGet(bad), "Ready"); got != "False/AdaptersUnavailable" {
		t.Errorf("invalid cluster Ready = %s", got)
	}
	bad = w.delete(bad)
	w.run(v, bad)
	if _, ok := w.get(bad); ok {
		t.Error("deleting cluster with only the validation adapter was not removed")
	}
}
