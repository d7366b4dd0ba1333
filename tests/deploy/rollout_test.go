//go:build integration

package deploy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

const rolloutBase = "temporal: {address: temporal.example:7233, insecure: true}\nimage: {tag: v9.9.9}\nreconciler: {drainTimeoutSeconds: 120}\n"

// renderRollout renders rolloutBase with more values over it.
func renderRollout(t *testing.T, more string) (string, error) {
	t.Helper()
	return renderFiles(t, "hf", rolloutBase, more)
}

// Worker versioning, reconciler.rollout: hook (the default): one reconciler
// Deployment per build, kept by Helm when the next build replaces it, whose
// workers only declare their version; a post-install/post-upgrade Job
// promotes it, drains the others and deletes their Deployments, allowed to
// do no more than read and delete Deployments in the release's namespace.
func TestChartRollsTheReconcilerOutWithAHook(t *testing.T) {
	manifest, err := renderRollout(t, "{}\n")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range decode(t, manifest) {
		byName[o.GetKind()+"/"+o.GetName()] = o
		if strings.HasPrefix(o.GetKind(), "Cluster") && o.GetLabels()["app.kubernetes.io/component"] == "reconciler-rollout" {
			t.Errorf("the hook has a cluster-wide %s %s", o.GetKind(), o.GetName())
		}
	}

	// The Deployment: named and labelled by its build, kept by Helm.
	key := reconcilerKey(t, byName)
	rec := byName[key]
	slug := rec.GetLabels()["hyperfleet.io/build"]
	if !strings.HasPrefix(slug, "v9-9-9-") || len(slug) != len("v9-9-9-")+8 || rec.GetName() != "hf-hyperfleet-reconciler-"+slug {
		t.Errorf("reconciler Deployment %s, build label %q; want hf-hyperfleet-reconciler-v9-9-9-<hash>", rec.GetName(), slug)
	}
	if a := rec.GetAnnotations(); a["helm.sh/resource-policy"] != "keep" || a["hyperfleet.io/build-id"] != "v9.9.9" {
		t.Errorf("reconciler annotations %v, want resource-policy keep and build-id v9.9.9", a)
	}
	sel, _, _ := unstructured.NestedStringMap(rec.Object, "spec", "selector", "matchLabels")
	pods, _, _ := unstructured.NestedStringMap(rec.Object, "spec", "template", "metadata", "labels")
	if sel["hyperfleet.io/build"] != slug || pods["hyperfleet.io/build"] != slug {
		t.Errorf("selector %v, pod labels %v: each build's Deployment must select only its own pods", sel, pods)
	}
	env := envOf(container(t, byName, key))
	if env["HYPERFLEET_PROMOTE"] != "never" || env["HYPERFLEET_BUILD_ID"] != "v9.9.9" || env["HYPERFLEET_DRAIN_TIMEOUT"] != "120s" {
		t.Errorf("reconciler versioning env = %v, want promote never", env)
	}
	// A build id that differs only in what its name drops is another
	// Deployment.
	other, err := renderRollout(t, "reconciler: {buildId: v9-9-9}\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(other, "name: "+rec.GetName()+"\n") {
		t.Errorf("builds v9.9.9 and v9-9-9 share Deployment %s", rec.GetName())
	}

	// The hook Job.
	job := byName["Job/hf-hyperfleet-reconciler-rollout"]
	if job == nil {
		t.Fatal("no hook Job rendered")
	}
	if a := job.GetAnnotations(); a["helm.sh/hook"] != "post-install,post-upgrade" || a["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		t.Errorf("hook Job annotations %v", a)
	}
	deadline, _, _ := unstructured.NestedFieldNoCopy(job.Object, "spec", "activeDeadlineSeconds")
	backoff, _, _ := unstructured.NestedFieldNoCopy(job.Object, "spec", "backoffLimit")
	if fmt.Sprint(deadline) != "960" || fmt.Sprint(backoff) != "0" {
		t.Errorf("hook Job activeDeadlineSeconds %v (want 960: the timeout and a minute), backoffLimit %v (want 0)", deadline, backoff)
	}
	sa, _, _ := unstructured.NestedString(job.Object, "spec", "template", "spec", "serviceAccountName")
	if sa != "hf-hyperfleet-reconciler-rollout" || byName["ServiceAccount/"+sa] == nil {
		t.Errorf("hook Job service account %q, rendered: %v", sa, byName["ServiceAccount/"+sa] != nil)
	}
	c := container(t, byName, "Job/hf-hyperfleet-reconciler-rollout")
	args := fmt.Sprint(c["args"])
	const selector = "app.kubernetes.io/instance=hf,app.kubernetes.io/component=reconciler"
	if want := "[versions rollout v9.9.9 --deployment-name=hyperfleet-reconciler --selector=" + selector + " --timeout=900s]"; args != want {
		t.Errorf("hook args %s, want %s", args, want)
	}
	if s, err := labels.Parse(selector); err != nil || !s.Matches(labels.Set(rec.GetLabels())) {
		t.Errorf("the hook's selector does not select the reconciler Deployment (%v)", err)
	}
	jobEnv := envOf(c)
	if jobEnv["HYPERFLEET_TEMPORAL_ADDRESS"] != "temporal.example:7233" {
		t.Errorf("hook env = %v", jobEnv)
	}
	var nsFrom string
	envList, _ := c["env"].([]any)
	for _, e := range envList {
		m := e.(map[string]any)
		if m["name"] == "HYPERFLEET_KUBE_NAMESPACE" {
			nsFrom, _, _ = unstructured.NestedString(m, "valueFrom", "fieldRef", "fieldPath")
		}
	}
	if nsFrom != "metadata.namespace" {
		t.Errorf("HYPERFLEET_KUBE_NAMESPACE from %q, want the downward API's metadata.namespace", nsFrom)
	}

	// RBAC: get, list and delete of Deployments in the release namespace.
	role := byName["Role/hf-hyperfleet-reconciler-rollout"]
	if role == nil {
		t.Fatal("no Role for the hook")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	want := []any{map[string]any{"apiGroups": []any{"apps"}, "resources": []any{"deployments"}, "verbs": []any{"get", "list", "delete"}}}
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("hook Role rules %v, want %v", rules, want)
	}
	rb := byName["RoleBinding/hf-hyperfleet-reconciler-rollout"]
	if rb == nil {
		t.Fatal("no RoleBinding for the hook")
	}
	ref, _, _ := unstructured.NestedStringMap(rb.Object, "roleRef")
	subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
	if ref["kind"] != "Role" || ref["name"] != role.GetName() || len(subjects) != 1 ||
		fmt.Sprint(subjects[0]) != "map[kind:ServiceAccount name:hf-hyperfleet-reconciler-rollout namespace:hf]" {
		t.Errorf("hook RoleBinding roleRef %v subjects %v", ref, subjects)
	}

	// A canary: the ramp and its duration reach the hook.
	canary, err := renderRollout(t, "reconciler: {rampPercent: 10, rampSeconds: 300}\n")
	if err != nil {
		t.Fatal(err)
	}
	byName = map[string]*unstructured.Unstructured{}
	for _, o := range decode(t, canary) {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	if args := fmt.Sprint(container(t, byName, "Job/hf-hyperfleet-reconciler-rollout")["args"]); !strings.HasSuffix(args, "--timeout=900s --ramp=10 --ramp-for=300s]") {
		t.Errorf("canary hook args %s", args)
	}
}

func TestChartRefusesBadRolloutValues(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		{"unknown mode", "reconciler: {rollout: blue-green}\n", `reconciler.rollout "blue-green"`},
		{"a ramp of everything", "reconciler: {rampPercent: 100}\n", "reconciler.rampPercent 100"},
		{"a duration without a ramp", "reconciler: {rampSeconds: 60}\n", "reconciler.rampSeconds needs reconciler.rampPercent"},
		{"no time to drain", "reconciler: {rampPercent: 5, rampSeconds: 600, hookTimeoutSeconds: 700}\n", "raise it above rampSeconds + drainTimeoutSeconds (720)"},
	} {
		if _, err := renderRollout(t, c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: helm template error = %v, want it to say %q", c.name, err, c.want)
		}
	}
}
