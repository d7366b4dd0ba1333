//go:build integration

package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

// Contract: a watch refused for lack of list and watch rights makes the
// transport say its watch is not working, so runs report their objects as
// unwatched (the workflow keeps the short safety-net window) and the
// worker's hyperfleet_adapter_objects_watched drops to 0.
func TestRefusedWatchIsReportedUnhealthy(t *testing.T) {
	k := testenv.KubeAPI(t)
	ctx := context.Background()
	// An identity that may write ConfigMaps but not list or watch them.
	const user = "adapter-without-watch"
	testenv.Grant(t, k, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
		Verbs: []string{"get", "create", "update", "patch", "delete"}})
	limited := rest.CopyConfig(k.Config)
	limited.Impersonate = rest.ImpersonationConfig{UserName: user}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr, err := New(limited, "hyperfleet-test", WithWatch(Watch{Adapter: "refused", Notify: func(transport.Change) {}, Context: wctx, Logger: zerolog.Nop()}))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Watches() || !tr.WatchHealthy() {
		t.Fatal("a watching transport that has watched nothing yet must report a healthy watch")
	}
	cm := transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "refused", "namespace": "default"}, "data": map[string]any{"k": "v"}}
	transport.Stamp(cm, "refused", "Cluster", "c1")
	if _, err := tr.Create(ctx, "", cm); err != nil {
		t.Fatalf("create as %s: %v", user, err)
	}
	await.True(t, 30*time.Second, "the transport to report its refused watch (no list/watch on configmaps) as not working",
		func() bool { return !tr.WatchHealthy() })
	if !tr.Watches() {
		t.Error("Watches() must stay true: it says objects are stamped for a watch, not that the watch works")
	}
}
