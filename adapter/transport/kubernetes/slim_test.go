package kubernetes

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// client-go may pass an object it already transformed to the transform
// again; slimmed twice, a Job must compare equal to itself slimmed once.
func TestSlimIsIdempotent(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "j", "namespace": "ns", "annotations": map[string]any{"hyperfleet.io/generation": "1"}},
		"spec":     map[string]any{"backoffLimit": int64(0)},
		"status":   map[string]any{"active": int64(1), "startTime": "2026-11-25T18:00:00Z"}}}
	once, err := slim(job)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := slim(once)
	if err != nil {
		t.Fatal(err)
	}
	a, b := once.(*unstructured.Unstructured).GetAnnotations(), twice.(*unstructured.Unstructured).GetAnnotations()
	if !maps.Equal(a, b) {
		t.Errorf("annotations slimmed once %v, twice %v", a, b)
	}
	if what := changeOf(once, twice); what != "" {
		t.Errorf("slimming again reads as a change: %q", what)
	}
}
