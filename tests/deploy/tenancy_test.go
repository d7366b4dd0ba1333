//go:build integration

package deploy

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

const tenancyBase = "temporal: {address: temporal.example:7233}\nadapters:\n  - {name: landing-zone, configMap: landing-zone}\n"

// renderObjects renders values and indexes the objects by kind/name.
func renderObjects(t *testing.T, values string) (map[string]*unstructured.Unstructured, []*unstructured.Unstructured) {
	t.Helper()
	manifest, err := render(t, values, "tenancy-test")
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, manifest)
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	return byName, objs
}

// tenancyData returns the rendered tenancy ConfigMap's files.
func tenancyData(t *testing.T, byName map[string]*unstructured.Unstructured) map[string]string {
	t.Helper()
	cm := byName["ConfigMap/hf-hyperfleet-tenancy"]
	if cm == nil {
		t.Fatal("no tenancy ConfigMap rendered")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	return data
}

// gatewayValues is gateway-style tenancy with the gateway in namespace
// gateway and Prometheus admitted too.
const gatewayValues = tenancyBase + `tenancy:
  config:
    system_header: X-HyperFleet-System
    dimensions:
      - {header: X-Tenant-Org, key: org, required: true}
      - {header: X-Tenant-Project, key: project, required: false}
  gateway:
    podSelector: {matchLabels: {app.kubernetes.io/name: my-gateway}}
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: gateway}}
    extraIngressFrom:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
        podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
`

// Gateway style: the API loads the tenancy file the chart renders, with
// the system secret the chart generates mounted where the file says; the
// reconciler and every adapter worker send the system header with that
// secret (issue 43: a bare header made anyone a system caller); and a
// NetworkPolicy admits to the API only the gateway, this release's
// workers and the peers asked for.
func TestChartTenancyGatewayStyle(t *testing.T) {
	byName, objs := renderObjects(t, gatewayValues)
	data := tenancyData(t, byName)
	secret := secretValue(t, byName, "Secret/hf-hyperfleet-system-secret", "secret")
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	const mounted = "system_secret_file: /etc/hyperfleet/system-secret/secret"
	if !strings.Contains(data["tenancy.yaml"], mounted) {
		t.Fatalf("the tenancy file does not name the mounted secret:\n%s", data["tenancy.yaml"])
	}
	cfg, err := tenancy.Parse("tenancy.yaml", []byte(strings.Replace(data["tenancy.yaml"], mounted, "system_secret_file: "+file, 1)), false)
	if err != nil {
		t.Fatalf("the rendered tenancy file, with the generated secret, does not load: %v\n%s", err, data["tenancy.yaml"])
	}
	if h, v, ok := cfg.SystemCredential(); h != "X-HyperFleet-System" || v != secret || !ok || len(cfg.Dimensions) != 2 {
		t.Errorf("rendered tenancy = %+v, credential %s %t", cfg, h, ok)
	}
	api := container(t, byName, "Deployment/hf-hyperfleet-api")
	if f := envOf(api)["HYPERFLEET_TENANCY_FILE"]; f != "/etc/hyperfleet/tenancy/tenancy.yaml" {
		t.Errorf("HYPERFLEET_TENANCY_FILE = %q", f)
	}
	if mounts := fmt.Sprint(api["volumeMounts"]); !strings.Contains(mounts, "/etc/hyperfleet/tenancy") {
		t.Errorf("API mounts = %s", mounts)
	}
	annotations, _, _ := unstructured.NestedStringMap(byName["Deployment/hf-hyperfleet-api"].Object, "spec", "template", "metadata", "annotations")
	if annotations["hyperfleet.io/tenancy-checksum"] == "" {
		t.Errorf("the API pods do not roll with the tenancy: annotations %v", annotations)
	}
	for _, d := range []string{"Deployment/hf-hyperfleet-api", reconcilerKey(t, byName), "Deployment/hf-hyperfleet-adapter-landing-zone"} {
		checkSystemSecretMounted(t, byName, d, "hf-hyperfleet-system-secret", "secret")
	}
	for _, d := range []string{reconcilerKey(t, byName), "Deployment/hf-hyperfleet-adapter-landing-zone"} {
		args := fmt.Sprint(container(t, byName, d)["args"])
		if !strings.Contains(args, "--api-system-header=X-HyperFleet-System") || !strings.Contains(args, "--api-system-secret-file=/etc/hyperfleet/system-secret/secret") ||
			strings.Contains(args, "--api-token-file") {
			t.Errorf("%s args = %s", d, args)
		}
	}
	checkAPINetworkPolicy(t, byName)
	dryRun(t, objs)
}

// checkAPINetworkPolicy: the policy selects the API's pods and admits, on
// the API's port, exactly the gateway's pods in the gateway's namespace,
// the release's reconciler and adapters, and Prometheus.
func checkAPINetworkPolicy(t *testing.T, byName map[string]*unstructured.Unstructured) {
	t.Helper()
	u := byName["NetworkPolicy/hf-hyperfleet-api"]
	if u == nil {
		t.Fatal("no NetworkPolicy for the API rendered")
	}
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
		t.Fatal(err)
	}
	podLabels := func(key string) labels.Set {
		l, _, _ := unstructured.NestedStringMap(byName[key].Object, "spec", "template", "metadata", "labels")
		return l
	}
	apiPods := podLabels("Deployment/hf-hyperfleet-api")
	if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || !sel.Matches(apiPods) || sel.Matches(podLabels(reconcilerKey(t, byName))) {
		t.Errorf("the policy selects %v, not the API's pods only (%v)", np.Spec.PodSelector, err)
	}
	if fmt.Sprint(np.Spec.PolicyTypes) != "[Ingress]" || len(np.Spec.Ingress) != 1 {
		t.Fatalf("policy types %v, %d ingress rules; want one Ingress rule", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	rule := np.Spec.Ingress[0]
	if len(rule.Ports) != 1 || rule.Ports[0].Port.IntValue() != 8000 {
		t.Errorf("ports %v, want the API's 8000", rule.Ports)
	}
	// admitted reports whether a pod with these labels, in a namespace
	// with these labels (nil: the release's), may reach the API.
	admitted := func(pod, ns labels.Set) bool {
		for _, peer := range rule.From {
			if peer.IPBlock != nil || peer.PodSelector == nil {
				continue
			}
			ps, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			if !ps.Matches(pod) {
				continue
			}
			if peer.NamespaceSelector == nil {
				if ns == nil {
					return true
				}
				continue
			}
			nss, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			if ns != nil && nss.Matches(ns) {
				return true
			}
		}
		return false
	}
	gatewayNS := labels.Set{"kubernetes.io/metadata.name": "gateway"}
	for _, c := range []struct {
		name    string
		pod, ns labels.Set
		want    bool
	}{
		{"the reconciler", podLabels(reconcilerKey(t, byName)), nil, true},
		{"an adapter", podLabels("Deployment/hf-hyperfleet-adapter-landing-zone"), nil, true},
		{"the gateway", labels.Set{"app.kubernetes.io/name": "my-gateway"}, gatewayNS, true},
		{"Prometheus", labels.Set{"app.kubernetes.io/name": "prometheus"}, labels.Set{"kubernetes.io/metadata.name": "monitoring"}, true},
		{"the gateway's labels in the release's namespace", labels.Set{"app.kubernetes.io/name": "my-gateway"}, nil, false},
		{"another pod of the gateway's namespace", labels.Set{"app": "tenant"}, gatewayNS, false},
		{"another release's reconciler", labels.Set{"app.kubernetes.io/instance": "other", "app.kubernetes.io/component": "reconciler"}, nil, false},
		{"a pod of the release's namespace", labels.Set{"app": "tenant"}, nil, false},
		{"an API pod", apiPods, nil, false},
	} {
		if got := admitted(c.pod, c.ns); got != c.want {
			t.Errorf("%s (%v): admitted %t, want %t", c.name, c.pod, got, c.want)
		}
	}
}

// secretValue is the decoded value of a rendered Secret's key.
func secretValue(t *testing.T, byName map[string]*unstructured.Unstructured, name, key string) string {
	t.Helper()
	o := byName[name]
	if o == nil {
		t.Fatalf("no %s rendered", name)
	}
	enc, _, _ := unstructured.NestedString(o.Object, "data", key)
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < 32 {
		t.Fatalf("%s %s = %q (%v): want at least 32 characters", name, key, raw, err)
	}
	return string(raw)
}

// checkSystemSecretMounted: the Deployment mounts the Secret's key as
// /etc/hyperfleet/system-secret/secret.
func checkSystemSecretMounted(t *testing.T, byName map[string]*unstructured.Unstructured, deployment, secret, key string) {
	t.Helper()
	if mounts := fmt.Sprint(container(t, byName, deployment)["volumeMounts"]); !strings.Contains(mounts, "mountPath:/etc/hyperfleet/system-secret name:system-secret") {
		t.Errorf("%s mounts = %s", deployment, mounts)
	}
	vols, _, _ := unstructured.NestedSlice(byName[deployment].Object, "spec", "template", "spec", "volumes")
	want := fmt.Sprintf("map[name:system-secret secret:map[items:[map[key:%s path:secret]] secretName:%s]]", key, secret)
	for _, v := range vols {
		if fmt.Sprint(v) == want {
			return
		}
	}
	t.Errorf("%s volumes = %v, want %s", deployment, vols, want)
}

// An existing Secret is mounted instead of a generated one, by its key;
// waiveNetworkPolicy renders no policy.
func TestChartTenancyGatewayExistingSecret(t *testing.T) {
	values := strings.Replace(gatewayValues, "  gateway:\n", "  gateway:\n    systemSecret: {name: fleet-system-secret, key: token}\n    waiveNetworkPolicy: true\n", 1)
	byName, objs := renderObjects(t, values)
	for key := range byName {
		if strings.HasPrefix(key, "Secret/") || strings.HasPrefix(key, "NetworkPolicy/") {
			t.Errorf("rendered %s", key)
		}
	}
	for _, d := range []string{"Deployment/hf-hyperfleet-api", reconcilerKey(t, byName), "Deployment/hf-hyperfleet-adapter-landing-zone"} {
		checkSystemSecretMounted(t, byName, d, "fleet-system-secret", "token")
	}
	if !strings.Contains(tenancyData(t, byName)["tenancy.yaml"], "system_secret_file: /etc/hyperfleet/system-secret/secret") {
		t.Error("the tenancy file does not name the mounted secret")
	}
	dryRun(t, objs)
}

// JWT style: more issuers and their CA for the API; a token Secret
// mounted into the reconciler and every adapter worker.
func TestChartTenancyJWTStyle(t *testing.T) {
	byName, objs := renderObjects(t, tenancyBase+`api:
  jwt: {enabled: true, jwksURL: "https://sso.example.com/certs", issuer: "https://sso.example.com", audience: hyperfleet}
tenancy:
  config:
    system_identities: [svc-adapter]
    dimensions:
      - {claim: org_id, key: org, required: true}
  systemCaller: {tokenSecret: hyperfleet-system-token}
  jwtIssuers:
    - {issuer: "https://sso.example.com/services", jwks_url: "https://sso.example.com/services/certs", audience: hyperfleet, identity_claim: azp}
  jwtCASecret: sso-ca
`)
	data := tenancyData(t, byName)
	if _, err := tenancy.Parse("tenancy.yaml", []byte(data["tenancy.yaml"]), true); err != nil {
		t.Fatalf("the rendered tenancy file does not load: %v\n%s", err, data["tenancy.yaml"])
	}
	file := filepath.Join(t.TempDir(), "issuers.yaml")
	if err := os.WriteFile(file, []byte(data["issuers.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	issuers, err := auth.LoadIssuers(file)
	if err != nil || len(issuers) != 1 || issuers[0].IdentityClaim != "azp" {
		t.Fatalf("the rendered issuers file: %+v, %v\n%s", issuers, err, data["issuers.yaml"])
	}
	env := envOf(container(t, byName, "Deployment/hf-hyperfleet-api"))
	for k, v := range map[string]string{
		"HYPERFLEET_TENANCY_FILE": "/etc/hyperfleet/tenancy/tenancy.yaml", "HYPERFLEET_JWT_ISSUERS_FILE": "/etc/hyperfleet/tenancy/issuers.yaml",
		"HYPERFLEET_JWT_CA_FILE": "/etc/hyperfleet/jwt-ca/ca.crt", "HYPERFLEET_JWT_ENABLED": "true",
	} {
		if env[k] != v {
			t.Errorf("API %s = %q, want %q", k, env[k], v)
		}
	}
	for _, d := range []string{reconcilerKey(t, byName), "Deployment/hf-hyperfleet-adapter-landing-zone"} {
		c := container(t, byName, d)
		if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--api-token-file=/etc/hyperfleet/system-token/token") || strings.Contains(args, "--api-system-header") {
			t.Errorf("%s args = %s", d, args)
		}
		if mounts := fmt.Sprint(c["volumeMounts"]); !strings.Contains(mounts, "/etc/hyperfleet/system-token") || strings.Contains(mounts, "system-secret") {
			t.Errorf("%s mounts = %s", d, mounts)
		}
	}
	for key := range byName {
		if strings.HasPrefix(key, "NetworkPolicy/") || strings.HasPrefix(key, "Secret/") {
			t.Errorf("JWT style renders %s", key)
		}
	}
	dryRun(t, objs)
}

// Without tenancy values nothing of it renders; contradictory values fail
// with a message naming them.
func TestChartTenancyOffAndRefusals(t *testing.T) {
	off, err := render(t, tenancyBase, "hf")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tenancy", "TENANCY", "system-header", "system-secret", "NetworkPolicy", "JWT_ISSUERS", "JWT_CA"} {
		if strings.Contains(off, s) {
			t.Errorf("the chart renders %q without tenancy values", s)
		}
	}
	for _, c := range []struct{ name, values, want string }{
		{"issuers without JWT", "tenancy:\n  jwtIssuers: [{issuer: a, jwks_url: https://a}]\n", "tenancy.jwtIssuers needs api.jwt.enabled"},
		{"two reconciler tokens", "reconciler: {apiTokenSecret: a}\ntenancy:\n  config: {system_header: X-S}\n  systemCaller: {tokenSecret: b}\n",
			"set tenancy.systemCaller.tokenSecret or reconciler.apiTokenSecret, not both"},
		// Issue 43: gateway style without isolation lets anyone who
		// reaches the API set the tenant headers.
		{"gateway style without a gateway selector", "tenancy:\n  config: {system_header: X-S, dimensions: [{header: X-Org, key: org, required: true}]}\n",
			"tenancy.gateway.podSelector is not set"},
		{"gateway style without a gateway selector names the waiver", "tenancy:\n  config: {system_header: X-S, dimensions: [{header: X-Org, key: org, required: true}]}\n",
			"tenancy.gateway.waiveNetworkPolicy: true"},
		{"a secret file of one's own", "tenancy:\n  config: {system_header: X-S, system_secret_file: /s, dimensions: [{header: X-Org, key: org, required: true}]}\n  gateway: {waiveNetworkPolicy: true}\n",
			"tenancy.config.system_secret_file is set by the chart"},
		{"a header of the system caller's own", "tenancy:\n  config: {system_header: X-S, dimensions: [{header: X-Org, key: org, required: true}]}\n  gateway: {waiveNetworkPolicy: true}\n  systemCaller: {header: X-Other}\n",
			"remove tenancy.systemCaller.header"},
	} {
		if _, err := render(t, tenancyBase+c.values, "hf"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// dryRun has a real kube-apiserver accept every object without storing it.
func dryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	kube := testenv.KubeAPI(t)
	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "tenancy-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(ns) > 63 {
		ns = ns[:63]
	}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, o := range objs {
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
