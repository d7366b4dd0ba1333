//go:build integration

package kubernetes

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/transporttest"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func TestTransportAgainstKubeAPIServer(t *testing.T) {
	k := testenv.KubeAPI(t)
	tr, err := New(k.Config, "hyperfleet-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := transport.Object{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "transport-test",
		"labels": map[string]any{"app": "hf"}, "annotations": map[string]any{"hyperfleet.io/generation": "1"}}}
	if got, err := tr.Get(ctx, "", transport.RefOf(ns)); err != nil || got != nil {
		t.Fatalf("get before create: %v %v", got, err)
	}
	created, err := tr.Create(ctx, "", ns)
	if err != nil {
		t.Fatal(err)
	}
	if created["status"].(map[string]any)["phase"] != "Active" {
		t.Errorf("namespace status = %v", created["status"])
	}
	cm := transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "transport-test",
		"labels": map[string]any{"app": "hf"}, "annotations": map[string]any{"hyperfleet.io/generation": "1"}}, "data": map[string]any{"k": "v1"}}
	if _, err := tr.Create(ctx, "", cm); err != nil {
		t.Fatal(err)
	}
	cm["data"] = map[string]any{"k": "v2"}
	cm["metadata"].(map[string]any)["annotations"] = map[string]any{"hyperfleet.io/generation": "2"}
	updated, err := tr.Update(ctx, "", cm)
	if err != nil {
		t.Fatal(err)
	}
	if updated["data"].(map[string]any)["k"] != "v2" || transport.Annotation(updated, "hyperfleet.io/generation") != "2" {
		t.Errorf("update = %v", updated)
	}
	for _, q := range []transport.Query{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "transport-test", Labels: map[string]string{"app": "hf"}},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "*", Labels: map[string]string{"app": "hf"}},
		{APIVersion: "v1", Kind: "Namespace", Labels: map[string]string{"app": "hf"}},
	} {
		items, err := tr.List(ctx, "", q)
		if err != nil || len(items) != 1 {
			t.Errorf("list %+v = %d items, %v", q, len(items), err)
		}
	}
	if err := tr.Delete(ctx, "", transport.RefOf(cm), "Background"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Delete(ctx, "", transport.RefOf(cm), "Background"); err != nil {
		t.Errorf("deleting an absent object: %v", err)
	}
	if got, _ := tr.Get(ctx, "", transport.RefOf(cm)); got != nil {
		t.Error("config map survived its deletion")
	}

	// Errors name the problem.
	bad := transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "INVALID-NAME", "namespace": "transport-test"}}
	if _, err := tr.Create(ctx, "", bad); err == nil || !strings.Contains(err.Error(), "Invalid value: \"INVALID-NAME\"") || !strings.Contains(err.Error(), "HTTP 422") {
		t.Errorf("invalid name: %v", err)
	}
	crd := transport.Object{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}
	if _, err := tr.Create(ctx, "", crd); err == nil || !strings.Contains(err.Error(), "is its CRD installed?") {
		t.Errorf("unknown kind: %v", err)
	}
	noNS := transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}
	if _, err := tr.Create(ctx, "", noNS); err == nil || !strings.Contains(err.Error(), "set metadata.namespace") {
		t.Errorf("namespaced object without a namespace: %v", err)
	}
}

func TestConformance(t *testing.T) {
	k := testenv.KubeAPI(t)
	tr, err := New(k.Config, "hyperfleet-conformance")
	if err != nil {
		t.Fatal(err)
	}
	transporttest.Run(t, transporttest.Suite{Transport: tr, Within: 30 * time.Second, Object: transporttest.ConfigMaps("default")})
}

// A running Job's status moves (start time, active and ready pods) long
// before it has a condition; none of that is a change of readiness, so
// the watch stays quiet until the Job ends. Runs the real Job controller
// and the pod stand-in, which lets the Job's pod succeed a second after it
// exists. Contract: "what an adapter applied wakes its resource's workflow
// when it changes readiness".
func TestWatchWaitsForAJobToEnd(t *testing.T) {
	k := testenv.KubeAPI(t)
	pods, err := k.StartPodStandIn(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pods.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	changes := make(chan transport.Change, 16)
	tr, err := New(k.Config, "hyperfleet-test", WithWatch(Watch{Adapter: "job-watch", Context: ctx, Logger: zerolog.Nop(),
		Notify: func(c transport.Change) { changes <- c }}))
	if err != nil {
		t.Fatal(err)
	}
	// A namespace of its own, so the test can run again on the same server.
	namespace := fmt.Sprintf("job-watch-%d", time.Now().UnixNano())
	ns := transport.Object{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}}
	if _, err := tr.Create(ctx, "", ns); err != nil {
		t.Fatal(err)
	}
	job := transport.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{
		"name": "j", "namespace": namespace,
		"labels":      map[string]any{transport.LabelAdapter: "job-watch", transport.LabelOwnerKind: "Cluster", transport.LabelOwnerID: "c1"},
		"annotations": map[string]any{"hyperfleet.io/generation": "1"}},
		"spec": map[string]any{"backoffLimit": 0, "template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "example.invalid/validate"}}}}}}
	if _, err := tr.Create(ctx, "", job); err != nil {
		t.Fatal(err)
	}
	var sawRunning bool
	for {
		select {
		case c := <-changes:
			live, err := tr.Get(ctx, "", transport.RefOf(job))
			if err != nil {
				t.Fatal(err)
			}
			status, _ := live["status"].(map[string]any)
			conds, _ := status["conditions"].([]any)
			if len(conds) == 0 {
				t.Fatalf("notice %v for a Job that has no condition yet (status %v): a running Job's progress woke the adapter", c, status)
			}
			if c.What != transport.ChangeStatus || c.OwnerID != "c1" {
				t.Errorf("notice %+v, want a status change of cluster c1's Job", c)
			}
			if c.Version == "" {
				t.Errorf("notice %+v carries no resourceVersion: the workers that all saw it could not send it as one signal", c)
			}
			if !sawRunning {
				t.Fatalf("the Job ended (%v) before the test saw it run", conds)
			}
			for _, cond := range conds {
				if m, _ := cond.(map[string]any); m["type"] == "Complete" && m["status"] == "True" {
					return
				}
			}
		case <-time.After(20 * time.Millisecond):
			if !sawRunning {
				live, err := tr.Get(ctx, "", transport.RefOf(job))
				if err != nil {
					t.Fatal(err)
				}
				status, _ := live["status"].(map[string]any)
				sawRunning = status["active"] != nil && status["conditions"] == nil
			}
		case <-ctx.Done():
			t.Fatalf("no notice that the Job completed (running seen: %v)", sawRunning)
		}
	}
}
