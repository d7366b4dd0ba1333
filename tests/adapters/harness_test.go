//go:build integration

// Package adapters runs adapters end to end without Temporal: the real
// adapter engine against a real kube-apiserver (with its controller
// manager) and the real HyperFleet API, checking what lands in Kubernetes
// and the exact status each adapter reports.
package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	kubetransport "github.com/hyperfleet/hyperfleet/adapter/transport/kubernetes"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
)

// world is a HyperFleet API and a Kubernetes control plane.
type world struct {
	t    *testing.T
	url  string
	kube *testenv.Kube
	cs   kubernetes.Interface
	k8s  transport.Transport
	// maestro, when set, gives an adapter its Maestro transport.
	maestro func(*taskconfig.Bundle) transport.Transport
	// now is the engine's clock: fixed per test so payloads compare exactly,
	// and close to the real time so the API accepts observed_time.
	now time.Time
}

func newWorld(t *testing.T, clusterAdapters, nodePoolAdapters []string) *world {
	t.Helper()
	app, err := apiserver.Build(context.Background(), apiserver.Options{
		Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "api.db")},
		Registered: map[string][]string{resource.KindCluster: clusterAdapters, resource.KindNodePool: nodePoolAdapters},
		Logger:     zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(func() { srv.Close(); app.Close() })
	k := testenv.KubeAPI(t)
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kubetransport.New(k.Config, "hyperfleet-test")
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, url: srv.URL, kube: k, cs: cs, k8s: tr, now: time.Now().UTC().Truncate(time.Second)}
}

// adapter loads an adapter directory (adapter-config.yaml and
// adapter-task-config.yaml) and wires it to this world.
func (w *world) adapter(dir string) *executor.Engine {
	w.t.Helper()
	return w.adapterFiles(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"))
}

func (w *world) adapterFiles(config, task string) *executor.Engine {
	w.t.Helper()
	b, problems := taskconfig.Load(config, task, taskconfig.Options{})
	if err := problems.Err(); err != nil {
		w.t.Fatal(err)
	}
	api, err := apiclient.New(apiclient.Config{AdapterName: b.Adapter.Adapter.Name, BaseURL: w.url, RetryAttempts: 1, Timeout: 10 * time.Second})
	if err != nil {
		w.t.Fatal(err)
	}
	transports := map[string]transport.Transport{taskconfig.ClientKubernetes: w.k8s}
	if w.maestro != nil {
		transports[taskconfig.ClientMaestro] = w.maestro(b)
	}
	eng, err := executor.New(b, executor.Options{
		API: api, Transports: transports,
		Now: func() time.Time { return w.now }, LookupEnv: func(string) (string, bool) { return "", false },
		Logger: zerolog.Nop(),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return eng
}

// run executes one round of an adapter for a resource.
func (w *world) run(eng *executor.Engine, r resource.Resource) *executor.Result {
	w.t.Helper()
	res, err := eng.Run(context.Background(), eventFor(r))
	if err != nil {
		w.t.Fatalf("%s run: %v\n%s", eng.Name(), err, trace(res))
	}
	return res
}

func eventFor(r resource.Resource) map[string]any {
	ev := map[string]any{"id": r.ID, "kind": r.Kind, "href": r.Href, "generation": r.Generation}
	if r.OwnerReferences != nil {
		ev["owner_references"] = map[string]any{"id": r.OwnerReferences.ID, "kind": r.OwnerReferences.Kind, "href": r.OwnerReferences.Href}
	}
	return ev
}

func trace(res *executor.Result) string {
	if res == nil {
		return ""
	}
	b, _ := json.MarshalIndent(res.State.Trace, "", "  ")
	return string(b)
}

func (w *world) call(method, path string, body any) (int, []byte) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, w.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (w *world) createCluster(name string, spec map[string]any) resource.Resource {
	w.t.Helper()
	code, raw := w.call("POST", resource.BasePath+"/clusters", map[string]any{"kind": "Cluster", "name": name, "spec": spec})
	if code != 201 {
		w.t.Fatalf("create cluster: %d %s", code, raw)
	}
	var r resource.Resource
	json.Unmarshal(raw, &r)
	return r
}

func (w *world) createNodePool(c resource.Resource, name string, spec map[string]any) resource.Resource {
	w.t.Helper()
	code, raw := w.call("POST", c.Href+"/nodepools", map[string]any{"kind": "NodePool", "name": name, "spec": spec})
	if code != 201 {
		w.t.Fatalf("create node pool: %d %s", code, raw)
	}
	var r resource.Resource
	json.Unmarshal(raw, &r)
	return r
}

// get re-reads a resource; ok is false after it was removed.
func (w *world) get(r resource.Resource) (resource.Resource, bool) {
	w.t.Helper()
	code, raw := w.call("GET", r.Href, nil)
	if code == 404 {
		return resource.Resource{}, false
	}
	if code != 200 {
		w.t.Fatalf("get %s: %d %s", r.Href, code, raw)
	}
	var out resource.Resource
	json.Unmarshal(raw, &out)
	return out, true
}

func (w *world) mustGet(r resource.Resource) resource.Resource {
	w.t.Helper()
	out, ok := w.get(r)
	if !ok {
		w.t.Fatalf("%s was removed", r.Href)
	}
	return out
}

func (w *world) patch(r resource.Resource, body string) resource.Resource {
	w.t.Helper()
	code, raw := w.call("PATCH", r.Href, json.RawMessage(body))
	if code != 200 {
		w.t.Fatalf("patch: %d %s", code, raw)
	}
	var out resource.Resource
	json.Unmarshal(raw, &out)
	return out
}

func (w *world) delete(r resource.Resource) resource.Resource {
	w.t.Helper()
	code, raw := w.call("DELETE", r.Href, nil)
	if code != 202 {
		w.t.Fatalf("delete: %d %s", code, raw)
	}
	var out resource.Resource
	json.Unmarshal(raw, &out)
	return out
}

// condition returns "Status/Reason" of a resource condition.
func condition(r resource.Resource, typ string) string {
	c, ok := r.Condition(typ)
	if !ok {
		return "missing"
	}
	return string(c.Status) + "/" + c.Reason
}

// ops lists the resource operations of a run ("ns=CREATE cm=SKIP").
func ops(res *executor.Result) string {
	var out []string
	for _, s := range res.State.Trace.Resources.Steps {
		out = append(out, s.Name+"="+string(s.Operation))
	}
	return strings.Join(out, " ")
}

// reported returns the payload an adapter PUT, with the conditions as
// "Type=Status" for compact assertions.
func reported(t *testing.T, res *executor.Result, payload string) (map[string]any, string) {
	t.Helper()
	p, ok := res.Post.Payloads[payload]
	if !ok {
		t.Fatalf("payload %s was not built:\n%s", payload, trace(res))
	}
	var conds []string
	for _, c := range p["conditions"].([]any) {
		m := c.(map[string]any)
		conds = append(conds, fmt.Sprintf("%s=%s", m["type"], m["status"]))
	}
	return p, strings.Join(conds, " ")
}

// conditionOf finds one condition in a payload.
func conditionOf(p map[string]any, typ string) map[string]any {
	for _, c := range p["conditions"].([]any) {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func (w *world) namespaceExists(name string) (bool, string) {
	ns, err := w.cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, ""
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return true, string(ns.Status.Phase)
}
