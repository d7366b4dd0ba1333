//go:build integration

// Package deploy tests the Helm chart in deploy/helm: it renders with the
// real helm binary (built into bin/ by make test-tools) and every rendered
// object is accepted by a real kube-apiserver (server-side dry run).
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource/kindsfile"
)

var chart = filepath.Join("..", "..", "deploy", "helm", "hyperfleet")

func helm(t *testing.T) string {
	t.Helper()
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bin, "helm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found: run `make test-tools` (builds helm from Go modules into bin/)", p)
	}
	return p
}

// render runs helm template with a values file; the error carries helm's
// message.
func render(t *testing.T, values, namespace string) (string, error) {
	t.Helper()
	// The tests render with Temporal connected without authentication
	// (insecure, asked for by name) unless their values say otherwise;
	// TestChartRefusesUnauthenticatedTemporal checks the refusal.
	return renderFiles(t, namespace, "temporal: {insecure: true}\n", values)
}

// renderFiles runs helm template with values files, later ones winning.
func renderFiles(t *testing.T, namespace string, values ...string) (string, error) {
	t.Helper()
	args := []string{"template", "hf", chart, "--namespace", namespace}
	for i, v := range values {
		file := filepath.Join(t.TempDir(), fmt.Sprintf("values-%d.yaml", i))
		if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", file)
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out.String(), nil
}

func shippedFile(t *testing.T, adapter, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "taskconfigs", adapter, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// indent prefixes every line for a YAML block scalar.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func TestChartLints(t *testing.T) {
	out, err := exec.Command(helm(t), "lint", chart, "--strict").CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

func TestChartRendersObjectsTheAPIServerAccepts(t *testing.T) {
	kube := testenv.KubeAPI(t)
	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "chart-test"
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	values := fmt.Sprintf(`temporal:
  address: temporal.example:7233
  namespace: hyperfleet
  tls: {enabled: true, secretName: temporal-mtls}
api:
  clusterAdapters: [validation, landing-zone]
  nodepoolAdapters: []
  clusterOptionalAdapters: [audit]
adapters:
  - name: landing-zone
    files:
      adapter-config.yaml: |
%s
      adapter-task-config.yaml: |
%s
    clusterRules:
      - apiGroups: [""]
        resources: [namespaces, configmaps]
        verbs: [get, list, watch, create, update, patch, delete]
  - name: validation
    configMap: validation-adapter
    serviceAccount: {create: false, name: default}
    maxConcurrentActivities: 20
    maestro:
      grpcServerAddress: maestro-grpc.maestro:8090
      httpServerAddress: https://maestro.maestro:8000
      insecure: false
      tlsSecret: maestro-client
      clientCertificate: true
`, indent(shippedFile(t, "landing-zone", "adapter-config.yaml"), "        "),
		indent(shippedFile(t, "landing-zone", "adapter-task-config.yaml"), "        "))
	manifest, err := render(t, values, ns)
	if err != nil {
		t.Fatal(err)
	}
	objects := decode(t, manifest)

	kinds := map[string]int{}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		kinds[o.GetKind()]++
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	// The reconciler's roll-out hook (reconciler.rollout: hook, the
	// default) brings a Job with its ServiceAccount, Role and RoleBinding.
	want := map[string]int{"Deployment": 4, "Service": 1, "ConfigMap": 1, "ServiceAccount": 2, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Job": 1, "Role": 1, "RoleBinding": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s objects, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}

	// The API: PostgreSQL from the Secret, adapters as JSON, a readiness
	// probe that does not follow Temporal.
	api := container(t, byName, "Deployment/hf-hyperfleet-api")
	env := envOf(api)
	if env["HYPERFLEET_CLUSTER_ADAPTERS"] != `["validation","landing-zone"]` || env["HYPERFLEET_NODEPOOL_ADAPTERS"] != "[]" ||
		env["HYPERFLEET_TEMPORAL_ADDRESS"] != "temporal.example:7233" || env["HYPERFLEET_TEMPORAL_TLS_CA"] != "/etc/hyperfleet/temporal-tls/ca.crt" {
		t.Errorf("API env = %v", env)
	}
	// Optional adapters are set only when given: an empty list leaves the
	// variable (and so a kinds file's optional_adapters) alone.
	if opt, ok := env["HYPERFLEET_NODEPOOL_OPTIONAL_ADAPTERS"]; env["HYPERFLEET_CLUSTER_OPTIONAL_ADAPTERS"] != `["audit"]` || ok {
		t.Errorf("API optional adapters: cluster %q, node pool %q (set: %v)", env["HYPERFLEET_CLUSTER_OPTIONAL_ADAPTERS"], opt, ok)
	}
	if path, _, _ := unstructured.NestedString(api, "readinessProbe", "httpGet", "path"); path != "/readyz?exclude=workflow-engine" {
		t.Errorf("API readiness probe path = %q", path)
	}
	// Each adapter: its own Deployment and service account, the API's
	// Service address, its files mounted as an adapter directory.
	lz := container(t, byName, "Deployment/hf-hyperfleet-adapter-landing-zone")
	args := fmt.Sprint(lz["args"])
	if !strings.Contains(args, "--adapter-dir=/etc/hyperfleet/adapter") || !strings.Contains(args, "--api-base-url=http://hf-hyperfleet-api:8000") {
		t.Errorf("landing-zone worker args = %s", args)
	}
	if sa, _, _ := unstructured.NestedString(byName["Deployment/hf-hyperfleet-adapter-landing-zone"].Object, "spec", "template", "spec", "serviceAccountName"); sa != "hf-hyperfleet-adapter-landing-zone" {
		t.Errorf("landing-zone service account = %q", sa)
	}
	if v := fmt.Sprint(container(t, byName, "Deployment/hf-hyperfleet-adapter-validation")["args"]); !strings.Contains(v, "--max-concurrent-activities=20") {
		t.Errorf("validation worker args = %s", v)
	}
	// Maestro settings become HYPERFLEET_MAESTRO_* with the TLS Secret mounted.
	validation := container(t, byName, "Deployment/hf-hyperfleet-adapter-validation")
	env = envOf(validation)
	for k, v := range map[string]string{
		"HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS": "maestro-grpc.maestro:8090", "HYPERFLEET_MAESTRO_HTTP_SERVER_ADDRESS": "https://maestro.maestro:8000",
		"HYPERFLEET_MAESTRO_INSECURE": "false", "HYPERFLEET_MAESTRO_CA_FILE": "/etc/hyperfleet/maestro/ca.crt",
		"HYPERFLEET_MAESTRO_CERT_FILE": "/etc/hyperfleet/maestro/tls.crt", "HYPERFLEET_MAESTRO_KEY_FILE": "/etc/hyperfleet/maestro/tls.key",
	} {
		if env[k] != v {
			t.Errorf("validation worker %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := envOf(lz)["HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS"]; ok {
		t.Error("landing-zone has Maestro settings it was not given")
	}
	if mounts := fmt.Sprint(validation["volumeMounts"]); !strings.Contains(mounts, "/etc/hyperfleet/maestro") {
		t.Errorf("validation worker mounts = %s", mounts)
	}
	if v := fmt.Sprint(container(t, byName, reconcilerKey(t, byName))["args"]); !strings.Contains(v, "--reconciler") {
		t.Errorf("reconciler args = %s", v)
	}

	// The rendered ConfigMap is a valid adapter directory.
	cm := byName["ConfigMap/hf-hyperfleet-adapter-landing-zone"]
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	dir := t.TempDir()
	for name, content := range data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, problems := taskconfig.Load(filepath.Join(dir, "adapter-config.yaml"), filepath.Join(dir, "adapter-task-config.yaml"), taskconfig.Options{}); problems.Err() != nil {
		t.Errorf("the chart's landing-zone files do not validate: %v", problems.Err())
	}

	// Every object is accepted by the kube-apiserver (schema, defaults,
	// RBAC references), without being stored.
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, o := range objects {
		m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
		if err != nil {
			t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
			continue
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Create(context.Background(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err != nil {
			t.Errorf("kube-apiserver refused %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func TestChartRefusesIncompleteValues(t *testing.T) {
	cases := []struct {
		name, values, want string
	}{
		{"adapter without files", "adapters:\n  - name: landing-zone\n", "adapter landing-zone: set adapters[].configMap"},
		{"adapter without a name", "adapters:\n  - configMap: x\n", "adapters[].name is required"},
		{"no database secret", "database:\n  urlSecret:\n    name: \"\"\n", "database.urlSecret.name is required"},
		{"no Temporal address", "temporal:\n  address: \"\"\n", "temporal.address is required"},
	}
	for _, c := range cases {
		_, err := render(t, c.values, "default")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: helm template error = %v, want it to say %q", c.name, err, c.want)
		}
	}
}

// Issue 43: the chart rendered workers that connect to Temporal without
// any authentication, where anyone who reaches Temporal can start or
// signal their workflows. It refuses to, unless asked for by name.
func TestChartRefusesUnauthenticatedTemporal(t *testing.T) {
	if _, err := renderFiles(t, "default", "{}\n"); err == nil || !strings.Contains(err.Error(), "temporal.insecure: true") {
		t.Errorf("no TLS, no API key: helm template error = %v, want a refusal naming temporal.insecure", err)
	}
	for _, values := range []string{
		"temporal: {insecure: true}\n",
		"temporal: {tls: {enabled: true, secretName: temporal-client}}\n",
		"temporal: {apiKeySecret: {name: temporal-cloud}}\n",
	} {
		if _, err := renderFiles(t, "default", values); err != nil {
			t.Errorf("%s: %v", strings.TrimSpace(values), err)
		}
	}
}

func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode rendered manifest: %v", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

func container(t *testing.T, objs map[string]*unstructured.Unstructured, key string) map[string]any {
	t.Helper()
	o, ok := objs[key]
	if !ok {
		t.Fatalf("no %s rendered", key)
	}
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s has no containers", key)
	}
	return cs[0].(map[string]any)
}

// reconcilerKey is the byName key of the one reconciler Deployment, whose
// name carries its build in the hook mode.
func reconcilerKey(t *testing.T, byName map[string]*unstructured.Unstructured) string {
	t.Helper()
	var keys []string
	for key, o := range byName {
		if o.GetKind() == "Deployment" && o.GetLabels()["app.kubernetes.io/component"] == "reconciler" {
			keys = append(keys, key)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("reconciler Deployments %v, want one", keys)
	}
	return keys[0]
}

func envOf(c map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := c["env"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			out[m["name"].(string)] = v
		}
	}
	return out
}

// The Grafana dashboard ships off by default; enabled, it is one ConfigMap
// carrying the chart's dashboard JSON under the sidecar's label.
func TestChartShipsTheDashboard(t *testing.T) {
	base := "temporal: {address: temporal.example:7233}\n"
	off, err := render(t, base, "hf")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(off, "hyperfleet.json") {
		t.Error("the dashboard ConfigMap renders although dashboard.enabled is false")
	}
	on, err := render(t, base+"dashboard: {enabled: true, namespace: monitoring, folder: Fleet}\n", "hf")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(chart, "dashboards", "hyperfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, o := range decode(t, on) {
		if o.GetKind() != "ConfigMap" || o.GetName() != "hf-hyperfleet-dashboard" {
			continue
		}
		found = true
		if o.GetNamespace() != "monitoring" || o.GetLabels()["grafana_dashboard"] != "1" || o.GetAnnotations()["grafana_folder"] != "Fleet" {
			t.Errorf("dashboard ConfigMap namespace %q labels %v annotations %v", o.GetNamespace(), o.GetLabels(), o.GetAnnotations())
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "hyperfleet.json")
		if strings.TrimSpace(data) != strings.TrimSpace(string(want)) {
			t.Error("the ConfigMap's hyperfleet.json differs from dashboards/hyperfleet.json")
		}
		var dash map[string]any
		if err := json.Unmarshal([]byte(data), &dash); err != nil || dash["uid"] != "hyperfleet" {
			t.Errorf("the shipped dashboard is not a Grafana dashboard (uid %v): %v", dash["uid"], err)
		}
	}
	if !found {
		t.Fatal("no dashboard ConfigMap with dashboard.enabled: true")
	}
}

// api.kinds becomes a ConfigMap the API loads as its kinds file.
func TestChartKindsValue(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kinds", "example-kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := render(t, "api:\n  kinds:\n"+indent(string(example), "    ")+"\n", "kinds-test")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range decode(t, manifest) {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	cm := byName["ConfigMap/hf-hyperfleet-kinds"]
	if cm == nil {
		t.Fatal("no kinds ConfigMap rendered")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	tab, err := kindsfile.Parse("kinds.yaml", []byte(data["kinds.yaml"]))
	if err != nil {
		t.Fatalf("the rendered kinds file does not load: %v\n%s", err, data["kinds.yaml"])
	}
	if got := strings.Join(tab.Names(), ","); got != "Cluster,NodePool,Channel,Version,WifConfig" {
		t.Errorf("rendered kinds %s", got)
	}
	api := container(t, byName, "Deployment/hf-hyperfleet-api")
	if f := envOf(api)["HYPERFLEET_KINDS_FILE"]; f != "/etc/hyperfleet/kinds/kinds.yaml" {
		t.Errorf("HYPERFLEET_KINDS_FILE = %q", f)
	}
	if mounts := fmt.Sprint(api["volumeMounts"]); !strings.Contains(mounts, "/etc/hyperfleet/kinds") {
		t.Errorf("API mounts = %s", mounts)
	}
	// Without the value nothing changes.
	plain, err := render(t, "api: {}\n", "kinds-test")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "KINDS_FILE") || strings.Contains(plain, "-kinds") {
		t.Error("the chart renders kinds settings without api.kinds")
	}
}

// tracing.endpoint reaches the API, the reconciler and every adapter
// worker, each with its own service.name; without it no tracing setting
// renders.
func TestChartTracingValue(t *testing.T) {
	base := "temporal: {address: temporal.example:7233}\nadapters:\n  - {name: landing-zone, configMap: landing-zone}\n"
	on, err := render(t, base+"tracing:\n  endpoint: http://otel-collector.observability:4317\n  extraEnv:\n    - {name: OTEL_EXPORTER_OTLP_HEADERS, value: x-tenant=fleet}\n", "hf")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range decode(t, on) {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	for deployment, service := range map[string]string{
		"Deployment/hf-hyperfleet-api":                  "hyperfleet-api",
		reconcilerKey(t, byName):                        "hyperfleet-reconciler",
		"Deployment/hf-hyperfleet-adapter-landing-zone": "hyperfleet-adapter-landing-zone",
	} {
		env := envOf(container(t, byName, deployment))
		if env["HYPERFLEET_OTEL_ENDPOINT"] != "http://otel-collector.observability:4317" || env["HYPERFLEET_OTEL_SERVICE_NAME"] != service ||
			env["OTEL_EXPORTER_OTLP_HEADERS"] != "x-tenant=fleet" {
			t.Errorf("%s tracing env: endpoint %q, service %q, headers %q", deployment,
				env["HYPERFLEET_OTEL_ENDPOINT"], env["HYPERFLEET_OTEL_SERVICE_NAME"], env["OTEL_EXPORTER_OTLP_HEADERS"])
		}
	}
	off, err := render(t, base, "hf")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(off, "OTEL") {
		t.Error("the chart renders tracing settings without tracing.endpoint")
	}
}

// Watches: served by default (docs/operator-guide.md, "Watches"), and
// api.watch: false turns them off on every API replica alike.
func TestChartWatchValue(t *testing.T) {
	base := "temporal: {address: temporal.example:7233}\n"
	for values, want := range map[string]string{"": "true", "api: {watch: false}\n": "false", "api: {watch: true}\n": "true"} {
		manifest, err := render(t, base+values, "hf")
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*unstructured.Unstructured{}
		for _, o := range decode(t, manifest) {
			byName[o.GetKind()+"/"+o.GetName()] = o
		}
		if got := envOf(container(t, byName, "Deployment/hf-hyperfleet-api"))["HYPERFLEET_WATCH"]; got != want {
			t.Errorf("values %q: the API's HYPERFLEET_WATCH = %q, want %q", values, got, want)
		}
	}
}

// Worker versioning, reconciler.rollout: rolling (the chart before the
// hook): the reconciler is the image tag's version of its deployment, one
// Deployment that promotes its own build, is ready only once its version
// is decided, is replaced one pod at a time and has time to drain; no hook
// renders. The alerts ship off by default.
func TestChartRollsTheReconcilerOutAndShipsAlerts(t *testing.T) {
	base := "temporal: {address: temporal.example:7233}\nimage: {tag: v9.9.9}\nreconciler: {rollout: rolling, drainTimeoutSeconds: 120}\n"
	out, err := render(t, base, "hf")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "kind: PrometheusRule") {
		t.Error("the PrometheusRule renders although prometheusRule.enabled is false")
	}
	var rec *unstructured.Unstructured
	for _, o := range decode(t, out) {
		switch {
		case o.GetKind() == "Deployment" && o.GetName() == "hf-hyperfleet-reconciler":
			rec = o
		case o.GetKind() == "Job" || o.GetKind() == "Role" || o.GetKind() == "RoleBinding":
			t.Errorf("the rolling mode renders %s %s", o.GetKind(), o.GetName())
		}
	}
	if rec == nil {
		t.Fatal("no reconciler Deployment")
	}
	if _, ok := rec.GetAnnotations()["helm.sh/resource-policy"]; ok {
		t.Errorf("the rolling mode's reconciler is kept by Helm: annotations %v", rec.GetAnnotations())
	}
	// Decoded through JSON, so numbers arrive as float64: compare their text.
	grace, _, _ := unstructured.NestedFieldNoCopy(rec.Object, "spec", "template", "spec", "terminationGracePeriodSeconds")
	unavailable, _, _ := unstructured.NestedFieldNoCopy(rec.Object, "spec", "strategy", "rollingUpdate", "maxUnavailable")
	if fmt.Sprint(grace) != "150" || fmt.Sprint(unavailable) != "0" {
		t.Errorf("termination grace %v s (want 150: the drain and 30 s), maxUnavailable %v (want 0)", grace, unavailable)
	}
	containers, _, _ := unstructured.NestedSlice(rec.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	env := map[string]string{}
	for _, e := range c["env"].([]any) {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			env[m["name"].(string)] = v
		}
	}
	if env["HYPERFLEET_BUILD_ID"] != "v9.9.9" || env["HYPERFLEET_DEPLOYMENT_NAME"] != "hyperfleet-reconciler" || env["HYPERFLEET_DRAIN_TIMEOUT"] != "120s" ||
		env["HYPERFLEET_PROMOTE"] != "true" {
		t.Errorf("reconciler versioning env = %v", env)
	}
	if path, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "path"); path != "/readyz" {
		t.Errorf("reconciler readiness probe path %q, want /readyz", path)
	}

	on, err := render(t, base+"prometheusRule: {enabled: true, labels: {release: prom}}\n", "hf")
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]string{}
	for _, o := range decode(t, on) {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		if o.GetLabels()["release"] != "prom" {
			t.Errorf("PrometheusRule labels %v, want the extra label", o.GetLabels())
		}
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				m := r.(map[string]any)
				alerts[fmt.Sprint(m["alert"])] = fmt.Sprint(m["expr"])
			}
		}
	}
	if !strings.Contains(alerts["HyperFleetReconcileStuck"], "hyperfleet_reconcile_stuck") ||
		!strings.Contains(alerts["HyperFleetWatchesDown"], "hyperfleet_adapter_objects_watched") ||
		!strings.Contains(alerts["HyperFleetActivityHeartbeatTimeouts"], `activity_task_timeout{timeout_type="Heartbeat", workflowType="ReconcileResource"}`) {
		t.Errorf("alerts = %v", alerts)
	}
}
