//go:build integration

package testenv

import (
	"context"
	"os"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestCompleteJob(t *testing.T) {
	k := KubeAPI(t)
	cs, _ := kubernetes.NewForConfig(k.Config)
	ctx := context.Background()
	cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}, metav1.CreateOptions{})
	for _, ok := range []bool{true, false} {
		name := map[bool]string{true: "ok", false: "ko"}[ok]
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{BackoffLimit: ptrTo(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
		if _, err := cs.BatchV1().Jobs("jobs").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := k.CompleteJob(ctx, "jobs", name, ok); err != nil {
			t.Fatal(err)
		}
		got, _ := cs.BatchV1().Jobs("jobs").Get(ctx, name, metav1.GetOptions{})
		want := map[bool]batchv1.JobConditionType{true: batchv1.JobComplete, false: batchv1.JobFailed}[ok]
		found := false
		for _, c := range got.Status.Conditions {
			found = found || c.Type == want && c.Status == corev1.ConditionTrue
		}
		if !found {
			t.Errorf("job %s conditions = %+v", name, got.Status.Conditions)
		}
	}
}
