package main

import (
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRolloutOptionsValidate(t *testing.T) {
	const sel = "app.kubernetes.io/instance=hf,app.kubernetes.io/component=reconciler"
	base := rolloutOptions{timeout: 15 * time.Minute, selector: sel}
	for _, tc := range []struct {
		name string
		edit func(*rolloutOptions)
		want string // "" accepts
	}{
		{"defaults", func(*rolloutOptions) {}, ""},
		{"no selector: Temporal only", func(o *rolloutOptions) { o.selector = "" }, ""},
		{"a canary that holds", func(o *rolloutOptions) { o.ramp, o.rampSet = 10, true }, ""},
		{"a timed canary", func(o *rolloutOptions) { o.ramp, o.rampSet, o.rampFor = 10, true, 5*time.Minute }, ""},
		{"no time", func(o *rolloutOptions) { o.timeout = 0 }, "--timeout"},
		{"ramp 0", func(o *rolloutOptions) { o.rampSet = true }, "--ramp 0"},
		{"ramp 100", func(o *rolloutOptions) { o.ramp, o.rampSet = 100, true }, "below 100"},
		{"ramp NaN", func(o *rolloutOptions) { o.ramp, o.rampSet = float32(math.NaN()), true }, "--ramp NaN"},
		{"ramp-for without ramp", func(o *rolloutOptions) { o.rampFor = time.Minute }, "--ramp-for needs --ramp"},
		{"negative ramp-for", func(o *rolloutOptions) { o.ramp, o.rampSet, o.rampFor = 10, true, -time.Second }, "--ramp-for -1s"},
		{"ramp-for eats the timeout", func(o *rolloutOptions) { o.ramp, o.rampSet, o.rampFor = 10, true, 15*time.Minute }, "raise --timeout"},
		{"bad selector", func(o *rolloutOptions) { o.selector = "a in (" }, "--selector"},
		{"selector of everything", func(o *rolloutOptions) { o.selector = " " }, "selects every Deployment"},
	} {
		o := base
		tc.edit(&o)
		err := o.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func TestKubeNamespace(t *testing.T) {
	file := func(content string, err error) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if p != serviceAccountNamespaceFile {
				t.Errorf("read %s", p)
			}
			return []byte(content), err
		}
	}
	for _, tc := range []struct {
		name, flag string
		read       func(string) ([]byte, error)
		want       string // "": an error
	}{
		{"the flag wins", "hf", file("other", nil), "hf"},
		{"the pod's namespace", "", file("fleet\n", nil), "fleet"},
		{"outside a pod", "", file("", os.ErrNotExist), ""},
		{"an empty file", "", file(" \n", nil), ""},
	} {
		got, err := kubeNamespace(tc.flag, tc.read)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "--kube-namespace") {
			t.Errorf("%s: error %v does not name --kube-namespace", tc.name, err)
		}
	}
}

// reconcilerObj is a reconciler Deployment of build in namespace hf:
// annotated (hook mode) or, with annotate false, only its env naming it.
func reconcilerObj(name, build string, annotate bool) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "hf", Labels: map[string]string{
			"app.kubernetes.io/instance": "hf", "app.kubernetes.io/component": "reconciler",
		}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "reconciler", Env: []corev1.EnvVar{{Name: "HYPERFLEET_DEPLOYMENT_NAME", Value: "hyperfleet-reconciler"}, {Name: "HYPERFLEET_BUILD_ID", Value: build}},
		}}}}},
	}
	if annotate {
		d.Annotations = map[string]string{buildIDAnnotation: build}
	}
	return d
}

func TestDescribeDeployment(t *testing.T) {
	annotated := reconcilerObj("a", "v2", true)
	annotated.Spec.Template.Spec.Containers[0].Env[1].Value = "ignored"
	deleting := reconcilerObj("c", "v1", false)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	unversioned := reconcilerObj("d", "", false)
	unversioned.Spec.Template.Spec.Containers[0].Env = nil
	for _, tc := range []struct {
		d    *appsv1.Deployment
		want reconcilerDeployment
	}{
		{annotated, reconcilerDeployment{name: "a", buildID: "v2"}},
		{reconcilerObj("b", "v1", false), reconcilerDeployment{name: "b", buildID: "v1"}}, // rendered by the rolling mode
		{deleting, reconcilerDeployment{name: "c", buildID: "v1", deleting: true}},
		{unversioned, reconcilerDeployment{name: "d"}},
	} {
		if got := describeDeployment(*tc.d); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.d.Name, got, tc.want)
		}
	}
}

func TestDeploymentsToDelete(t *testing.T) {
	ds := []reconcilerDeployment{
		{name: "hf-hyperfleet-reconciler-v3", buildID: "v3"},
		{name: "hf-hyperfleet-reconciler-v2", buildID: "v2"},
		{name: "hf-hyperfleet-reconciler", buildID: "v1"},
		{name: "gone", buildID: "v0", deleting: true},
		{name: "unversioned"},
	}
	stuck := errors.New("3 workflows are still pinned")
	for _, tc := range []struct {
		name      string
		build     string
		undrained map[string]error
		del, kept []string
	}{
		{"all drained", "v3", nil, []string{"hf-hyperfleet-reconciler-v2", "hf-hyperfleet-reconciler", "unversioned"}, nil},
		{"one did not drain", "v3", map[string]error{"v2": stuck}, []string{"hf-hyperfleet-reconciler", "unversioned"}, []string{"hf-hyperfleet-reconciler-v2"}},
		{"nothing known", "v3", map[string]error{"*": stuck}, nil, []string{"hf-hyperfleet-reconciler-v2", "hf-hyperfleet-reconciler", "unversioned"}},
		{"a rollback keeps its own", "v2", nil, []string{"hf-hyperfleet-reconciler-v3", "hf-hyperfleet-reconciler", "unversioned"}, nil},
		{"only its own", "v3", nil, nil, nil},
	} {
		in := ds
		if tc.name == "only its own" {
			in = ds[:1]
		}
		del, kept := deploymentsToDelete(in, tc.build, tc.undrained)
		var keptNames []string
		for _, k := range kept {
			keptNames = append(keptNames, k.name)
			if k.reason == "" {
				t.Errorf("%s: %s kept without a reason", tc.name, k.name)
			}
		}
		if !reflect.DeepEqual(del, tc.del) || !reflect.DeepEqual(keptNames, tc.kept) {
			t.Errorf("%s: delete %v keep %v; want delete %v keep %v", tc.name, del, keptNames, tc.del, tc.kept)
		}
	}
}

func TestDeploymentAvailable(t *testing.T) {
	replicas := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name   string
		d      appsv1.Deployment
		ok     bool
		reason string
	}{
		{"ready", appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas(2)}, Status: appsv1.DeploymentStatus{UpdatedReplicas: 2, AvailableReplicas: 2}}, true, ""},
		{"default one replica", appsv1.Deployment{Status: appsv1.DeploymentStatus{UpdatedReplicas: 1, AvailableReplicas: 1}}, true, ""},
		{"starting", appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas(2)}, Status: appsv1.DeploymentStatus{UpdatedReplicas: 2, AvailableReplicas: 1}}, false, "1 available"},
		{"scaled to 0", appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas(0)}}, false, "scaled to 0"},
		{"not observed", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, AvailableReplicas: 1}}, false, "not seen"},
	} {
		ok, reason := deploymentAvailable(tc.d)
		if ok != tc.ok || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %t %q, want %t %q", tc.name, ok, reason, tc.ok, tc.reason)
		}
	}
}

// The deletion against a clientset: only the selected Deployments of other
// drained versions go; this release's, another release's and an undrained
// version's stay; a second run deletes nothing more.
func TestRetireDeployments(t *testing.T) {
	other := reconcilerObj("other-hyperfleet-reconciler-v1", "v1", true)
	other.Labels["app.kubernetes.io/instance"] = "other"
	cs := fake.NewClientset(
		reconcilerObj("hf-hyperfleet-reconciler-v3", "v3", true),
		reconcilerObj("hf-hyperfleet-reconciler-v2", "v2", true),
		reconcilerObj("hf-hyperfleet-reconciler", "v1", false),
		reconcilerObj("hf-hyperfleet-reconciler-v0", "v0", true),
		other,
	)
	const sel = "app.kubernetes.io/instance=hf,app.kubernetes.io/component=reconciler"
	ctx := context.Background()
	undrained := map[string]error{"v0": errors.New("still pinned")}
	deleted, kept, err := retireDeployments(ctx, cs, "hf", sel, "v3", undrained)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hf-hyperfleet-reconciler", "hf-hyperfleet-reconciler-v2"}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	if len(kept) != 1 || kept[0].name != "hf-hyperfleet-reconciler-v0" {
		t.Errorf("kept %+v, want the undrained v0 only", kept)
	}
	list, err := cs.AppsV1().Deployments("hf").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range list.Items {
		left = append(left, d.Name)
	}
	if want := []string{"hf-hyperfleet-reconciler-v0", "hf-hyperfleet-reconciler-v3", "other-hyperfleet-reconciler-v1"}; !reflect.DeepEqual(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if deleted, _, err := retireDeployments(ctx, cs, "hf", sel, "v3", undrained); err != nil || len(deleted) != 0 {
		t.Errorf("second run: deleted %v, %v; want nothing", deleted, err)
	}
}
