//go:build integration

package adapters

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
)

// withMaestro adds a real Maestro server to the world, with a real
// `maestro agent` serving the consumer "cluster1" (the placement the
// upstream Maestro adapters hard-code) against the world's kube-apiserver.
// Each adapter gets a client built from its own clients.maestro block,
// with only the addresses replaced, as HYPERFLEET_MAESTRO_* would.
func (w *world) withMaestro() *testenv.Maestro {
	w.t.Helper()
	m := testenv.MaestroServer(w.t)
	m.RegisterConsumer(w.t, "cluster1")
	m.StartAgent(w.t, "cluster1", w.kube)
	w.maestro = func(b *taskconfig.Bundle) transport.Transport {
		cfg := maestrotransport.Overrides{GRPCAddress: m.GRPCAddr, HTTPAddress: m.HTTPURL}.
			Apply(maestrotransport.FromTaskConfig(b.Adapter.Clients.Maestro, b.Adapter.Adapter.Name))
		c, err := maestrotransport.New(cfg, zerolog.Nop())
		if err != nil {
			w.t.Fatal(err)
		}
		w.t.Cleanup(c.Close)
		return maestrotransport.NewTransport(c)
	}
	return m
}

// runUntil runs an adapter round after round (the agent applies and
// reports asynchronously) until the payload's conditions satisfy ok.
func (w *world) runUntil(eng *executor.Engine, r resource.Resource, payload string, within time.Duration, ok func(p map[string]any, conds string) bool) (*executor.Result, map[string]any) {
	w.t.Helper()
	var res *executor.Result
	var p map[string]any
	await.Eventually(w.t, within, eng.Name(), func() (bool, string) {
		var conds string
		res = w.run(eng, r)
		p, conds = reported(w.t, res, payload)
		return ok(p, conds), "last conditions " + conds
	}, func() string { return trace(res) })
	return res, p
}

// Upstream's cl-maestro adapter, unchanged, through a real Maestro server
// and agent: the ManifestWork is created, the agent applies its namespace
// and config map to the kube-apiserver, status feedback reaches the
// payload; an unchanged generation is skipped, a spec change is patched,
// and deletion removes everything and reports Finalized.
func TestCompatMaestroLifecycle(t *testing.T) {
	compat.Require(t, "upstream's cl-maestro adapter through a real Maestro server and agent")
	w := newWorld(t, []string{"cl-maestro"}, []string{})
	m := w.withMaestro()
	ctx := context.Background()
	c := w.createCluster("compat-maestro", map[string]any{"platform": map[string]any{"type": "gcp"}})
	eng := w.adapter(e2eAdapters + "/cl-maestro")
	work := c.ID + "-cl-maestro"
	ns := strings.ToLower(c.ID) + "-cl-maestro-namespace"

	res := w.run(eng, c)
	if ops(res) != "resource0=CREATE" {
		t.Fatalf("first round: %s\n%s", ops(res), trace(res))
	}
	_, p := w.runUntil(eng, c, "statusPayload", 60*time.Second, func(_ map[string]any, conds string) bool {
		return strings.Contains(conds, "Applied=True Available=True Health=True")
	})
	data := p["data"].(map[string]any)
	if got := data["namespace"].(map[string]any)["phase"]; got != "Active" {
		t.Errorf("namespace phase from status feedback = %v, want Active", got)
	}
	if got := data["manifestwork"].(map[string]any); got["name"] != work || got["consumer"] != "cluster1" {
		t.Errorf("manifestwork data = %v", got)
	}
	cm, err := w.cs.CoreV1().ConfigMaps(ns).Get(ctx, strings.ToLower(c.ID)+"-cl-maestro-configmap", metav1.GetOptions{})
	if err != nil || cm.Data["cluster_id"] != c.ID || cm.Data["platform_tier"] != "cloud" {
		t.Fatalf("config map applied by the agent = %v, %v", cm, err)
	}

	// Same generation: the cluster is Reconciled now, so cl-maestro's
	// precondition (reconciled is False, or deleting) holds the resources
	// back; Maestro keeps one ManifestWork at its version. (A round at an
	// unchanged generation that does reach the resource is a SKIP: see
	// cl-m-wrong-ds in TestCompatMaestroFailures.)
	before := m.ResourceBundles(t, "source='cl-maestro'")
	if res := w.run(eng, c); ops(res) != "" {
		t.Errorf("unchanged generation: %s", ops(res))
	}
	after := m.ResourceBundles(t, "source='cl-maestro'")
	if len(before) != 1 || len(after) != 1 || before[0]["version"] != after[0]["version"] {
		t.Errorf("bundles before/after the skip: %v / %v", versions(before), versions(after))
	}

	// A spec change: merge-patched at the new generation, applied by the agent.
	c = w.patch(c, `{"spec": {"platform": {"type": "onprem"}}}`)
	if res := w.run(eng, c); ops(res) != "resource0=UPDATE" {
		t.Fatalf("spec change: %s\n%s", ops(res), trace(res))
	}
	await.True(t, 60*time.Second, "config map patched by the agent", func() bool {
		cm, err := w.cs.CoreV1().ConfigMaps(ns).Get(ctx, strings.ToLower(c.ID)+"-cl-maestro-configmap", metav1.GetOptions{})
		return err == nil && cm.Data["platform_tier"] == "onprem" && cm.Annotations["hyperfleet.io/generation"] == "2"
	})
	if bundles := m.ResourceBundles(t, "source='cl-maestro'"); len(bundles) != 1 {
		t.Errorf("after the patch Maestro holds %d ManifestWorks of cl-maestro, want 1", len(bundles))
	}

	// Deletion: the ManifestWork goes through Maestro, the agent removes the
	// namespace, and the adapter reports Finalized once nothing is left.
	c = w.delete(c)
	if res := w.run(eng, c); ops(res) != "resource0=DELETE" {
		t.Fatalf("delete: %s\n%s", ops(res), trace(res))
	}
	w.runUntil(eng, c, "statusPayload", 90*time.Second, func(_ map[string]any, conds string) bool {
		return strings.HasSuffix(conds, "Finalized=True")
	})
	await.True(t, 90*time.Second, "namespace removed by the agent", func() bool {
		_, err := w.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if bundles := m.ResourceBundles(t, "source='cl-maestro'"); len(bundles) != 0 {
		t.Errorf("after deletion Maestro holds %v", versions(bundles))
	}
}

func versions(bundles []map[string]any) []any {
	out := make([]any, len(bundles))
	for i, b := range bundles {
		out[i] = b["version"]
	}
	return out
}

// Upstream's negative Maestro adapters end with the status their names
// describe; none fails the round.
func TestCompatMaestroFailures(t *testing.T) {
	compat.Require(t, "upstream's failing Maestro adapters through a real Maestro server and agent")
	w := newWorld(t, []string{"cl-m-unreg-consumer", "cl-m-wrong-ds", "cl-m-wrong-nest"}, []string{})
	w.withMaestro()
	c := w.createCluster("compat-maestro-bad", map[string]any{})

	// The ManifestWork names a consumer Maestro does not know. With this
	// API's 36-character cluster ids its namespace name
	// ("<id>-cl-m-unreg-consumer-namespace") is longer than 63 characters,
	// and Maestro refuses the manifest before it looks at the consumer:
	// either way the round ends Health=False naming the consumer and the
	// cause (the unregistered-consumer message itself is checked in
	// adapter/transport/maestro).
	res := w.run(w.adapter(e2eAdapters+"/cl-m-unreg-consumer"), c)
	p, conds := reported(t, res, "statusPayload")
	health := conditionOf(p, "Health")
	msg, _ := health["message"].(string)
	if conds != "Applied=False Available=False Health=False" || health["reason"] != "ExecutionFailed:resources" ||
		!strings.Contains(msg, `on consumer "unregistered-consumer"`) || !strings.Contains(msg, "must be no more than 63 characters") {
		t.Errorf("cl-m-unreg-consumer: %s, Health %v\n%s", conds, health, trace(res))
	}

	// Discovery looks for a ManifestWork name that is never created, and
	// nested discovery for manifests that are not in the work: both works
	// are applied. A discovery that finds nothing after the apply fails the
	// resources phase, as upstream reports it: Health=False with reason
	// ExecutionFailed:resources and a message naming the resource and the
	// discovery (upstream's "discovery after apply failed").
	wrongDS := w.adapter(e2eAdapters + "/cl-m-wrong-ds")
	for _, want := range []string{"resource0=CREATE", "resource0=SKIP"} {
		res := w.run(wrongDS, c)
		p, conds := reported(t, res, "statusPayload")
		health := conditionOf(p, "Health")
		msg, _ := health["message"].(string)
		if ops(res) != want || conds != "Applied=False Available=False Health=False" || health["reason"] != "ExecutionFailed:resources" ||
			!strings.HasPrefix(msg, "Adapter failed at phase [resources] step [resource0]: ") ||
			!strings.Contains(msg, `ManifestWork "`+c.ID+`-cl-m-wrong-ds" was`) ||
			!strings.Contains(msg, `discovery.by_name "`+c.ID+`-cl-m-wrong-ds-wrong": ManifestWork not found on "cluster1"`) {
			t.Errorf("cl-m-wrong-ds: %s %s, Health %v\n%s", ops(res), conds, health, trace(res))
		}
		if m := res.State.Meta; m.ExecutionStatus != "failed" || m.ExecutionError == nil || m.ExecutionError.Phase != "resources" || m.ExecutionError.Step != "resource0" {
			t.Errorf("cl-m-wrong-ds execution: %+v", m)
		}
	}
	if got := condition(w.mustGet(c), "ClMWrongDsSuccessful"); !strings.HasPrefix(got, "False/") {
		t.Errorf("ClMWrongDsSuccessful = %s", got)
	}
	if res := w.run(w.adapter(e2eAdapters+"/cl-m-wrong-nest"), c); ops(res) != "resource0=CREATE" {
		t.Errorf("cl-m-wrong-nest: %s\n%s", ops(res), trace(res))
	}
	// The work is found and applied, its manifests are not.
	_, p = w.runUntil(w.adapter(e2eAdapters+"/cl-m-wrong-nest"), c, "statusPayload", 60*time.Second, func(_ map[string]any, conds string) bool {
		return strings.HasPrefix(conds, "Applied=True")
	})
	if a := conditionOf(p, "Available"); a["status"] != "False" || a["reason"] != "NamespaceNotDiscovered" {
		t.Errorf("cl-m-wrong-nest: Available %v", a)
	}
}
