package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
)

// Upstream's cl-maestro adapter, unchanged, hosted by `hyperfleet worker`
// pointed at a real Maestro server with --maestro-* flags (the file names
// in-cluster addresses), reconciled through Temporal: the cluster becomes
// Ready from the ManifestWork's status feedback, a spec PATCH is patched
// through Maestro and applied by the agent, and DELETE removes the work and
// the applied objects before the cluster goes.
func TestMaestroAdapterThroughTemporal(t *testing.T) {
	compat.Require(t, "upstream's cl-maestro adapter through Temporal and a real Maestro")
	m := testenv.MaestroServer(t)
	m.RegisterConsumer(t, "cluster1")
	opts := defaultOptions()
	opts.noWorkers = true
	opts.registered = map[string][]string{hf.KindCluster: {"cl-maestro"}, hf.KindNodePool: {}}
	s := newSystem(t, opts)
	m.StartAgent(t, "cluster1", s.kube)
	s.startReconciler()
	dir := filepath.Join(compat.Dir(), "upstream-e2e-adapters", "cl-maestro")
	startProcess(t, "hyperfleet worker", []string{"worker", "--log-format", "json",
		"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--adapter-dir", dir, "--metrics-listen", "",
		"--maestro-grpc-server-address", m.GRPCAddr, "--maestro-http-server-address", m.HTTPURL})

	c := s.createCluster("e2e-maestro", map[string]any{"platform": map[string]any{"type": "gcp"}})
	s.waitReady(c, 1, 120*time.Second)
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
	eventually(t, 60*time.Second, func() (bool, string) {
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
	eventually(t, 90*time.Second, func() (bool, string) {
		_, err := s.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("namespace %s still there: %v", ns, err)
	}, nil)
	if bundles := m.ResourceBundles(t, "source='cl-maestro'"); len(bundles) != 0 {
		t.Errorf("after deletion Maestro holds %d ManifestWorks of cl-maestro", len(bundles))
	}
}
