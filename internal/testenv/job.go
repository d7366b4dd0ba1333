package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// CompleteJob records a Job's outcome as the Job controller would after its
// pod ran: Complete (succeeded) or Failed, with the conditions and counts the
// API server requires for a finished Job.
func (k *Kube) CompleteJob(ctx context.Context, namespace, name string, succeeded bool) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	start := metav1.NewTime(time.Now().Add(-10 * time.Second).UTC().Truncate(time.Second))
	end := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	cond := func(t, reason, msg string) map[string]any {
		return map[string]any{"type": t, "status": "True", "reason": reason, "message": msg,
			"lastProbeTime": end, "lastTransitionTime": end}
	}
	status := map[string]any{"startTime": start, "active": 0, "ready": 0}
	if succeeded {
		status["succeeded"] = 1
		status["completionTime"] = end
		status["conditions"] = []any{cond("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
			cond("Complete", "CompletionsReached", "Reached expected number of succeeded pods")}
	} else {
		status["failed"] = 1
		status["conditions"] = []any{cond("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
			cond("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")}
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	if _, err := cs.BatchV1().Jobs(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set the outcome of Job %s/%s: %w", namespace, name, err)
	}
	return nil
}
