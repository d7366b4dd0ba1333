//go:build integration

package reconcile

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Contract, "Reconciliation": every change that bumps a generation leads to
// a reconcile of that resource's adapters for the new generation.
func TestCreatePatchDelete(t *testing.T) {
	s := newSystem(t, defaultOptions())

	c := s.createCluster("e2e-lifecycle", map[string]any{"platform": map[string]any{"type": "gcp"}})
	np1 := s.createNodePool(c.ID, "workers", map[string]any{"replicas": 3})
	np2 := s.createNodePool(c.ID, "infra", map[string]any{"replicas": 1})

	c = s.waitReady(c, 1, 60*time.Second)
	for _, np := range []resource.Resource{np1, np2} {
		s.waitReady(np, 1, 60*time.Second)
	}
	// Every registered adapter reported at generation 1.
	for _, r := range []struct {
		res      resource.Resource
		adapters []string
	}{{c, clusterAdapters}, {np1, nodePoolAdapters}, {np2, nodePoolAdapters}} {
		st := s.statuses(r.res)
		for _, a := range r.adapters {
			if got, ok := st[a]; !ok || got.ObservedGeneration != 1 {
				t.Errorf("%s %s: adapter %s status %+v, want a report at generation 1", r.res.Kind, r.res.Name, a, got)
			}
		}
	}
	if !s.namespaceExists(c.ID) || !s.configMapExists(c.ID, "cluster-info") {
		t.Fatal("landing-zone did not create the namespace and its cluster-info ConfigMap")
	}
	for _, np := range []resource.Resource{np1, np2} {
		if !s.configMapExists(c.ID, "nodepool-"+np.ID) {
			t.Errorf("nodepool-config did not create the ConfigMap of %s", np.Name)
		}
	}
	// The workflow records Reconciled after the read-back that follows the
	// API's Ready, so its view may lag the API by a workflow task.
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		v, err := s.view(resource.KindCluster, c.ID)
		return err == nil && v.Reconciled && v.Generation == 1 && v.Phase == reconcile.PhaseStable,
			fmt.Sprintf("cluster workflow view = %+v, %v; want reconciled at generation 1, waiting in the stability window", v, err)
	}, nil)
	// An operator finds the cluster's workflow by its search attributes
	// (visibility is eventually consistent).
	wantID := reconcile.WorkflowID(resource.KindCluster, c.ID)
	for _, q := range []string{
		fmt.Sprintf("HyperFleetResourceID = '%s'", c.ID),
		fmt.Sprintf("HyperFleetKind = 'Cluster' AND HyperFleetResourceID = '%s' AND HyperFleetGeneration = 1 AND HyperFleetReconciled = true", c.ID),
	} {
		await.Eventually(t, 15*time.Second, "", func() (bool, string) {
			ids, err := s.findWorkflows(q)
			return err == nil && slices.Equal(ids, []string{wantID}), fmt.Sprintf("query %q listed %v (%v), want [%s]", q, ids, err, wantID)
		}, nil)
	}

	// PATCH the spec: Ready=False at once (generation 2 is not observed
	// yet), then True at generation 2.
	patched := s.mustDo(http.MethodPatch, path(c), map[string]any{"spec": map[string]any{"platform": map[string]any{"type": "aws"}}}, http.StatusOK)
	if patched.Generation != 2 || conditionStatus(patched, resource.ConditionReady) != resource.StatusFalse {
		t.Errorf("after PATCH: generation %d, Ready=%s; want 2 and False", patched.Generation, conditionStatus(patched, resource.ConditionReady))
	}
	s.waitReady(c, 2, 60*time.Second)
	cm, err := s.cs.CoreV1().ConfigMaps(c.ID).Get(context.Background(), "cluster-info", metav1.GetOptions{})
	if err != nil || cm.Data["platform"] != "aws" || cm.Data["generation"] != "2" {
		t.Errorf("cluster-info after PATCH: %v %v, want platform aws at generation 2", cm.Data, err)
	}

	// DELETE: node pools go first, then the cluster; Kubernetes is clean.
	deleted := s.mustDo(http.MethodDelete, path(c), nil, http.StatusAccepted)
	if deleted.Generation != 3 || deleted.DeletedTime == nil {
		t.Errorf("DELETE answered generation %d deleted_time %v", deleted.Generation, deleted.DeletedTime)
	}
	s.waitGone(c, 90*time.Second)
	for _, np := range []resource.Resource{np1, np2} {
		if _, ok := s.get(np); ok {
			t.Errorf("node pool %s outlived its cluster", np.Name)
		}
	}
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		return !s.namespaceExists(c.ID), "namespace " + c.ID + " still exists"
	}, nil)

	// Each workflow completed once its resource was gone. (Children go
	// first in the API, checked above; when each workflow learns of its
	// removal is up to Temporal's scheduling, so their close times have
	// no order to check.)
	s.waitClosed(resource.KindCluster, c.ID)
	for _, np := range []resource.Resource{np1, np2} {
		s.waitClosed(resource.KindNodePool, np.ID)
	}
	s.recordHistory("cluster-create-patch-delete", resource.KindCluster, c.ID)
	s.recordHistory("nodepool-create-delete", resource.KindNodePool, np1.ID)
}

func (s *system) waitClosed(kind, id string) *workflowInfo {
	s.t.Helper()
	var info *workflowInfo
	await.Eventually(s.t, 30*time.Second, "", func() (bool, string) {
		info = s.describeWorkflow(kind, id)
		return info.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, fmt.Sprintf("%s %s workflow is %s", kind, id, info.Status)
	}, nil)
	if info.Status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		s.t.Errorf("%s %s workflow ended %s, want completed", kind, id, info.Status)
	}
	return info
}
