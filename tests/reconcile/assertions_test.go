//go:build integration

// Waiting for and describing the states the end-to-end tests expect.

package reconcile

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/resource"
)

// waitReady polls until the resource is Ready at generation gen.
func (s *system) waitReady(r resource.Resource, gen int64, within time.Duration) resource.Resource {
	s.t.Helper()
	var last resource.Resource
	await.Eventually(s.t, within, "", func() (bool, string) {
		got, ok := s.get(r)
		if !ok {
			return false, "resource is gone"
		}
		last = got
		return got.Generation == gen && ready(got), fmt.Sprintf("generation %d, conditions %s", got.Generation, conditionsOf(got))
	}, func() string { return s.describe(last) })
	return last
}

func (s *system) waitGone(r resource.Resource, within time.Duration) {
	s.t.Helper()
	var last resource.Resource
	await.Eventually(s.t, within, "", func() (bool, string) {
		got, ok := s.get(r)
		last = got
		return !ok, "still there: " + conditionsOf(got)
	}, func() string { return s.describe(last) })
}

// describe explains a resource that did not get where a test expected:
// its adapter statuses and its workflow's view.
func (s *system) describe(r resource.Resource) string {
	if r.ID == "" {
		return ""
	}
	var b strings.Builder
	for name, st := range s.statuses(r) {
		fmt.Fprintf(&b, "  %s at generation %d:", name, st.ObservedGeneration)
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString("\n")
	}
	if v, err := s.view(r.Kind, r.ID); err == nil {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "  workflow: %s\n", j)
	} else {
		fmt.Fprintf(&b, "  workflow: %v\n", err)
	}
	return b.String()
}

func conditionsOf(r resource.Resource) string {
	var parts []string
	for _, c := range r.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s@%d(%s)", c.Type, c.Status, c.ObservedGeneration, c.Reason))
	}
	return strings.Join(parts, " ")
}
