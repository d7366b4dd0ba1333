package testenv

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CompleteJob ends a Job the way a kubelet would: it reports the Job's pods
// (created by the real Job controller) as exited 0, or 1 when succeeded is
// false, until the Job controller marks the Job Complete or Failed. It
// returns once the Job carries that condition.
func (k *Kube) CompleteJob(ctx context.Context, namespace, name string, succeeded bool) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		job, err := cs.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("complete Job %s/%s: %w", namespace, name, err)
		}
		for _, c := range job.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
				if (c.Type == batchv1.JobComplete) != succeeded {
					return fmt.Errorf("complete Job %s/%s: it ended %s", namespace, name, c.Type)
				}
				return nil
			}
		}
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/controller-uid=" + string(job.UID)})
		if err != nil {
			return fmt.Errorf("complete Job %s/%s: list its pods: %w", namespace, name, err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
				if err := markPod(ctx, cs, namespace, p.Name, !succeeded); err != nil {
					return fmt.Errorf("complete Job %s/%s: %w", namespace, name, err)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("complete Job %s/%s: the Job controller did not finish it within 60s", namespace, name)
}
