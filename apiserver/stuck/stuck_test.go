package stuck_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/stuck"
	"github.com/hyperfleet/hyperfleet/resource"
)

func TestSince(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	moved := created.Add(time.Hour)
	res := func(conds ...resource.Condition) *resource.Resource {
		return &resource.Resource{CreatedTime: created, Status: resource.Status{Conditions: conds}}
	}
	rec := func(status resource.ConditionStatus, at time.Time) resource.Condition {
		return resource.Condition{Type: resource.ConditionReconciled, Status: status, LastTransitionTime: at}
	}
	for _, tc := range []struct {
		name  string
		r     *resource.Resource
		since time.Time
		not   bool
	}{
		{"no condition yet", res(), created, true},
		{"False since it moved", res(rec(resource.StatusFalse, moved)), moved, true},
		{"False, no transition recorded", res(rec(resource.StatusFalse, time.Time{})), created, true},
		{"True", res(rec(resource.StatusTrue, moved)), time.Time{}, false},
	} {
		since, not := stuck.Since(tc.r)
		if !since.Equal(tc.since) || not != tc.not {
			t.Errorf("%s: Since = %v, %t; want %v, %t", tc.name, since, not, tc.since, tc.not)
		}
	}
}

func TestHolding(t *testing.T) {
	report := func(adapter string, gen int64, conds ...string) resource.AdapterStatus {
		s := resource.AdapterStatus{Adapter: adapter, ObservedGeneration: gen}
		for i := 0; i+1 < len(conds); i += 2 {
			s.Conditions = append(s.Conditions, resource.AdapterCondition{Type: conds[i], Status: resource.ConditionStatus(conds[i+1])})
		}
		return s
	}
	live := &resource.Resource{Generation: 2}
	deleting := &resource.Resource{Generation: 3, DeletedTime: &time.Time{}}
	required := []string{"a", "b"}
	for _, tc := range []struct {
		name    string
		r       *resource.Resource
		reports []resource.AdapterStatus
		want    string
	}{
		{"no reports", live, nil, "a,b"},
		{"one available", live, []resource.AdapterStatus{report("a", 2, "Available", "True")}, "b"},
		{"available at an older generation", live, []resource.AdapterStatus{report("a", 1, "Available", "True"), report("b", 2, "Available", "True")}, "a"},
		{"not available", live, []resource.AdapterStatus{report("a", 2, "Available", "False"), report("b", 2, "Available", "True")}, "a"},
		{"every adapter done", live, []resource.AdapterStatus{report("a", 2, "Available", "True"), report("b", 2, "Available", "True")}, stuck.NoAdapter},
		{"deleting: finalized counts", deleting, []resource.AdapterStatus{report("a", 3, "Finalized", "True"), report("b", 3, "Available", "True")}, "b"},
		{"an unregistered adapter's report", live, []resource.AdapterStatus{report("x", 2, "Available", "False")}, "a,b"},
	} {
		if got := strings.Join(stuck.Holding(tc.r, tc.reports, required), ","); got != tc.want {
			t.Errorf("%s: Holding = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Count on a real store (SQLite): three clusters, one Reconciled, one
// waiting for landing-zone, one waiting for both adapters; it counts only
// those not Reconciled for longer than the threshold.
func TestCount(t *testing.T) {
	registered := map[string][]string{resource.KindCluster: {"landing-zone", "validation"}, resource.KindNodePool: {}}
	app, err := apiserver.Build(context.Background(), apiserver.Options{
		Store:      store.Config{Driver: store.BackendSQLite, URL: filepath.Join(t.TempDir(), "hf.db")},
		Registered: registered, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(func() { srv.Close(); app.Close() })
	send := func(method, path, body string, want int) string {
		req, _ := http.NewRequest(method, srv.URL+"/api/hyperfleet/v1"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
		}
		loc := resp.Header.Get("Location")
		return loc[strings.LastIndex(loc, "/")+1:]
	}
	report := func(id, adapter string) {
		send(http.MethodPut, "/clusters/"+id+"/statuses", fmt.Sprintf(`{"adapter":%q,"observed_generation":1,"observed_time":%q,"conditions":[`+
			`{"type":"Available","status":"True"},{"type":"Applied","status":"True"},{"type":"Health","status":"True"}]}`,
			adapter, time.Now().UTC().Format(time.RFC3339)), http.StatusCreated)
	}
	done := send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"done","spec":{}}`, http.StatusCreated)
	report(done, "landing-zone")
	report(done, "validation")
	half := send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"half","spec":{}}`, http.StatusCreated)
	report(half, "validation")
	send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"none","spec":{}}`, http.StatusCreated)

	ctx := context.Background()
	got, err := stuck.Count(ctx, app.Store, registered, time.Hour, time.Now().Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := map[stuck.Key]int64{
		{resource.KindCluster, "landing-zone"}: 2, {resource.KindCluster, "validation"}: 1, {resource.KindCluster, stuck.NoAdapter}: 0,
		{resource.KindNodePool, stuck.NoAdapter}: 0,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Count = %v, want %v", got, want)
	}
	// Younger than the threshold: not stuck yet.
	got, err = stuck.Count(ctx, app.Store, registered, time.Hour, time.Now())
	if err != nil || got[stuck.Key{Kind: resource.KindCluster, Adapter: "landing-zone"}] != 0 {
		t.Errorf("Count of young resources = %v, %v; want zeros", got, err)
	}
}
