//go:build integration

// HTTP requests to the API and the resources they read, for the end-to-end tests.

package reconcile

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/hyperfleet/hyperfleet/resource"
)

func (s *system) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+resource.BasePath+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (s *system) mustDo(method, path string, body any, want int) resource.Resource {
	s.t.Helper()
	code, out := s.do(method, path, body)
	if code != want {
		s.t.Fatalf("%s %s = %d, want %d: %s", method, path, code, want, out)
	}
	var r resource.Resource
	if len(out) > 0 {
		_ = json.Unmarshal(out, &r)
	}
	return r
}

func (s *system) createCluster(name string, spec map[string]any) resource.Resource {
	s.t.Helper()
	if spec == nil {
		spec = map[string]any{}
	}
	return s.mustDo(http.MethodPost, "/clusters", map[string]any{"kind": "Cluster", "name": name, "spec": spec}, http.StatusCreated)
}

func (s *system) createNodePool(clusterID, name string, spec map[string]any) resource.Resource {
	s.t.Helper()
	return s.mustDo(http.MethodPost, "/clusters/"+clusterID+"/nodepools", map[string]any{"kind": "NodePool", "name": name, "spec": spec}, http.StatusCreated)
}

func path(r resource.Resource) string { return strings.TrimPrefix(r.Href, resource.BasePath) }

func (s *system) get(r resource.Resource) (resource.Resource, bool) {
	s.t.Helper()
	code, out := s.do(http.MethodGet, path(r), nil)
	if code == http.StatusNotFound {
		return resource.Resource{}, false
	}
	if code != http.StatusOK {
		s.t.Fatalf("GET %s = %d: %s", r.Href, code, out)
	}
	var got resource.Resource
	if err := json.Unmarshal(out, &got); err != nil {
		s.t.Fatal(err)
	}
	return got, true
}

func (s *system) statuses(r resource.Resource) map[string]resource.AdapterStatus {
	s.t.Helper()
	code, out := s.do(http.MethodGet, path(r)+"/statuses", nil)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s/statuses = %d: %s", r.Href, code, out)
	}
	var list resource.List[resource.AdapterStatus]
	if err := json.Unmarshal(out, &list); err != nil {
		s.t.Fatal(err)
	}
	m := map[string]resource.AdapterStatus{}
	for _, st := range list.Items {
		m[st.Adapter] = st
	}
	return m
}

// ready reports whether Ready=True is observed at the resource's current
// generation (the contract's "Reconciled").
func ready(r resource.Resource) bool {
	c, ok := r.Condition(resource.ConditionReady)
	return ok && c.Status == resource.StatusTrue && c.ObservedGeneration == r.Generation
}

func conditionStatus(r resource.Resource, typ string) resource.ConditionStatus {
	c, _ := r.Condition(typ)
	return c.Status
}
