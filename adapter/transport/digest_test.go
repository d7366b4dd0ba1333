package transport

import "testing"

func TestDigestJudgesReadinessAndContent(t *testing.T) {
	job := func(active int, conds ...map[string]any) Object {
		status := map[string]any{"active": active, "startTime": "2026-11-23T10:00:00Z"}
		if len(conds) > 0 {
			list := []any{}
			for _, c := range conds {
				list = append(list, c)
			}
			status["conditions"] = list
		}
		return Object{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "j", "namespace": "ns", "resourceVersion": "1"},
			"spec":     map[string]any{"backoffLimit": 0}, "status": status}
	}
	complete := map[string]any{"type": "Complete", "status": "True", "reason": "Done", "lastTransitionTime": "t1"}
	completeLater := map[string]any{"type": "Complete", "status": "True", "reason": "Done", "lastTransitionTime": "t2"}
	failed := map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
	edited := job(0, complete)
	edited["spec"] = map[string]any{"backoffLimit": 3}
	counted := func(field string, n int) Object {
		o := job(0)
		o["status"].(map[string]any)[field] = n
		return o
	}
	restarted := job(1)
	restarted["status"].(map[string]any)["startTime"] = "2026-11-23T10:05:00Z"
	restarted["status"].(map[string]any)["ready"] = 1
	notBatch := func(active int) Object {
		o := job(active)
		o["apiVersion"] = "example.com/v1"
		return o
	}
	replicaSet := func(ready int) Object {
		return Object{"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": map[string]any{"replicas": 1},
			"status": map[string]any{"replicas": 1, "readyReplicas": ready}}
	}
	noConds := Object{"kind": "ConfigMap", "data": map[string]any{"a": "1"}}
	noCondsEdited := Object{"kind": "ConfigMap", "data": map[string]any{"a": "2"}}

	for _, tc := range []struct {
		name string
		a, b Object
		same bool
	}{
		{"a running Job's pods and start time move", job(0), restarted, true},
		{"a new Job with no status yet, then running", func() Object {
			o := job(0)
			delete(o, "status")
			return o
		}(), restarted, true},
		{"a Job's pod succeeds", counted("succeeded", 0), counted("succeeded", 1), false},
		{"a Job's pod fails", counted("failed", 0), counted("failed", 1), false},
		{"no conditions or phase: the whole status counts", replicaSet(0), replicaSet(1), false},
		{"a kind named Job outside the batch group: the whole status counts", notBatch(0), notBatch(1), false},
		{"counters and times around the same conditions", job(1, complete), job(0, completeLater), true},
		{"metadata only", job(0, complete), func() Object {
			o := job(0, complete)
			o["metadata"] = map[string]any{"name": "j", "resourceVersion": "9"}
			return o
		}(), true},
		{"a condition appears", job(0), job(0, complete), false},
		{"another condition", job(0, complete), job(0, failed), false},
		{"the spec is edited", job(0, complete), edited, false},
		{"an object without status, edited", noConds, noCondsEdited, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Digest(tc.a) == Digest(tc.b); got != tc.same {
				t.Errorf("same digest = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestReadinessKeepsPhaseAndConditions(t *testing.T) {
	ns := map[string]any{"phase": "Active"}
	if got := Readiness(ns); len(got.([]string)) != 1 || got.([]string)[0] != "phase=Active" {
		t.Errorf("Readiness(namespace status) = %v", got)
	}
	if got := Readiness(nil); got != nil {
		t.Errorf("Readiness(nil) = %v", got)
	}
	if got := Readiness("odd"); got != "odd" {
		t.Errorf("Readiness(a string) = %v", got)
	}
}
