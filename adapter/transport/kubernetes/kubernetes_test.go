package kubernetes

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

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
