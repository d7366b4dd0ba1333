//go:build integration

package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Gateway style: the API loads the tenancy file the chart renders, and
// the reconciler and every adapter worker send the system header.
func TestChartTenancyGatewayStyle(t *testing.T) {
	byName, objs := renderObjects(t, tenancyBase+`tenancy:
  config:
    system_header: X-HyperFleet-System
    dimensions:
      - {header: X-Tenant-Org, key: org, required: true}
      - {header: X-Tenant-Project, key: project, required: false}
`)
	data := tenancyData(t, byName)
	cfg, err := tenancy.Parse("tenancy.yaml", []byte(data["tenancy.yaml"]), false)
	if err != nil {
		t.Fatalf("the rendered tenancy file does not load: %v\n%s", err, data["tenancy.yaml"])
	}
	if cfg.SystemHeader != "X-HyperFleet-System" || len(cfg.Dimensions) != 2 {
		t.Errorf("rendered tenancy = %+v", cfg)
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
	for _, d := range []string{"Deployment/hf-hyperfleet-reconciler", "Deployment/hf-hyperfleet-adapter-landing-zone"} {
		if args := fmt.Sprint(container(t, byName, d)["args"]); !strings.Contains(args, "--api-system-header=X-HyperFleet-System") || strings.Contains(args, "--api-token-file") {
			t.Errorf("%s args = %s", d, args)
		}
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
	for _, d := range []string{"Deployment/hf-hyperfleet-reconciler", "Deployment/hf-hyperfleet-adapter-landing-zone"} {
		c := container(t, byName, d)
		if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--api-token-file=/etc/hyperfleet/system-token/token") || strings.Contains(args, "--api-system-header") {
			t.Errorf("%s args = %s", d, args)
		}
		if mounts := fmt.Sprint(c["volumeMounts"]); !strings.Contains(mounts, "/etc/hyperfleet/system-token") {
			t.Errorf("%s mounts = %s", d, mounts)
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
	for _, s := range []string{"tenancy", "TENANCY", "system-header", "JWT_ISSUERS", "JWT_CA"} {
		if strings.Contains(off, s) {
			t.Errorf("the chart renders %q without tenancy values", s)
		}
	}
	for _, c := range []struct{ name, values, want string }{
		{"issuers without JWT", "tenancy:\n  jwtIssuers: [{issuer: a, jwks_url: https://a}]\n", "tenancy.jwtIssuers needs api.jwt.enabled"},
		{"two reconciler tokens", "reconciler: {apiTokenSecret: a}\ntenancy:\n  config: {system_header: X-S}\n  systemCaller: {tokenSecret: b}\n",
			"set tenancy.systemCaller.tokenSecret or reconciler.apiTokenSecret, not both"},
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
