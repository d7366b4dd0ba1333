package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/resource"
)

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// The seed 001 examples, as curl would send them.
func TestSeedExamples(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		body := `{"kind":"Cluster","name":"my-cluster","spec":{},"labels":{"environment":"production"}}`
		res := e.do("POST", base+"/clusters", body).expect(201)
		c := res.resource()
		if !uuidV7.MatchString(c.ID) {
			t.Errorf("id %q is not a lowercase UUIDv7", c.ID)
		}
		if c.Kind != "Cluster" || c.Name != "my-cluster" || c.Generation != 1 || c.Href != base+"/clusters/"+c.ID ||
			c.Labels["environment"] != "production" || string(c.Spec) != "{}" || c.CreatedBy != "system@hyperfleet.local" || c.UpdatedBy != c.CreatedBy {
			t.Errorf("created cluster = %+v", c)
		}
		if res.header.Get("Location") != c.Href {
			t.Errorf("Location = %q, want %q", res.header.Get("Location"), c.Href)
		}
		for _, typ := range []string{"Ready", "Available", "Reconciled", "LastKnownReconciled"} {
			cc, ok := c.Condition(typ)
			if !ok || cc.Status != "False" || cc.Reason != "AwaitingAdapters" || cc.Message != "Waiting for adapters to report status" || cc.ObservedGeneration != 0 ||
				cc.CreatedTime.IsZero() || cc.LastUpdatedTime.IsZero() || cc.LastTransitionTime.IsZero() {
				t.Errorf("initial %s = %+v", typ, cc)
			}
		}

		got := e.getCluster(c.ID)
		if got.ID != c.ID || !got.CreatedTime.Equal(c.CreatedTime) {
			t.Errorf("GET = %+v", got)
		}

		var list resource.List[resource.Resource]
		e.do("GET", base+"/clusters?page=1&pageSize=10", nil).expect(200).into(&list)
		if list.Kind != "ClusterList" || list.Page != 1 || list.Size != 1 || list.Total != 1 || len(list.Items) != 1 {
			t.Errorf("list = %+v", list)
		}

		seedReport := fmt.Sprintf(`{"adapter":"validator","observed_generation":1,"observed_time":%q,
			"conditions":[{"type":"Available","status":"True","reason":"AllValidationsPassed","message":"All validations passed"},
			{"type":"Applied","status":"True","reason":"ValidationJobApplied","message":"Validation job applied successfully"},
			{"type":"Health","status":"True","reason":"OperationsCompleted","message":"All adapter operations completed successfully"}],
			"data":{"job_name":"validator-job-abc123","attempt":1}}`, nowRFC3339())
		var st resource.AdapterStatus
		e.do("POST", base+"/clusters/"+c.ID+"/statuses", seedReport).expect(201).into(&st)
		if st.Adapter != "validator" || st.ObservedGeneration != 1 || len(st.Conditions) != 3 || st.CreatedTime.IsZero() || st.LastReportTime.IsZero() ||
			st.Conditions[0].LastTransitionTime.IsZero() || !strings.Contains(string(st.Data), "validator-job-abc123") {
			t.Errorf("stored status = %+v", st)
		}

		for _, q := range []string{
			"name='my-cluster'",
			"status.conditions.Ready='False' and labels.environment='production'",
			"labels.environment='dev' or labels.environment='production'",
			"status.conditions.Available='False'",
		} {
			var l resource.List[resource.Resource]
			e.do("GET", base+"/clusters?search="+urlQuery(q), nil).expect(200).into(&l)
			if l.Total != 1 {
				t.Errorf("search %q found %d, want 1", q, l.Total)
			}
		}
	})
}

func TestCreateValidation(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		cases := []struct {
			body   string
			status int
			code   string
			fields []string
		}{
			{`{"kind":"Cluster","name":"ab","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"name"}},
			{`{"kind":"Cluster","name":"` + strings.Repeat("a", 54) + `","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"name"}},
			{`{"kind":"Cluster","name":"` + strings.Repeat("a", 53) + `","spec":{}}`, 201, "", nil},
			{`{"kind":"Cluster","name":"My-Cluster","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"name"}},
			{`{"kind":"Cluster","name":"-abc","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"name"}},
			{`{"kind":"Cluster","name":"abc-","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"name"}},
			{`{"kind":"NodePool","name":"abc","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"kind"}},
			{`{"name":"abc","spec":{}}`, 400, "HYPERFLEET-VAL-001", []string{"kind"}},
			{`{"kind":"Cluster","name":"abc"}`, 400, "HYPERFLEET-VAL-001", []string{"spec"}},
			{`{"kind":"Cluster","name":"abc","spec":[]}`, 400, "HYPERFLEET-VAL-001", []string{"spec"}},
			{`{"kind":"Cluster","name":"abc","spec":"x"}`, 400, "HYPERFLEET-VAL-001", []string{"spec"}},
			{`{"kind":"Cluster","name":"abc","spec":{},"labels":{"bad key":"x"}}`, 400, "HYPERFLEET-VAL-001", []string{"labels.bad key"}},
			{`{"kind":"Cluster","name":"abc","spec":{},"labels":{"k":"` + strings.Repeat("v", 64) + `"}}`, 400, "HYPERFLEET-VAL-001", []string{"labels.k"}},
			{`{"kind":"Cluster","name":"abc","spec":{},"labels":{"k":5}}`, 400, "HYPERFLEET-VAL-002", []string{"labels"}},
			{`{"kind":"Cluster","name":"abc","spec":{},"id":"x"}`, 400, "HYPERFLEET-VAL-002", []string{"id"}},
			{`{"kind":"Cluster","name":5,"spec":{}}`, 400, "HYPERFLEET-VAL-002", []string{"name"}},
			{`{"kind":"Cluster",`, 400, "HYPERFLEET-VAL-002", nil},
			{`not json`, 400, "HYPERFLEET-VAL-002", nil},
			{``, 400, "HYPERFLEET-VAL-002", nil},
			{`{"kind":"Cluster","name":"A","spec":[]}`, 400, "HYPERFLEET-VAL-001", []string{"name", "spec"}},
		}
		for _, tc := range cases {
			res := e.do("POST", base+"/clusters", tc.body)
			if tc.status == 201 {
				res.expect(201)
				continue
			}
			p := res.problem(tc.status, tc.code)
			for _, f := range tc.fields {
				if !p.names(f) {
					t.Errorf("%s: problem names %v, want %s", tc.body, p.fields(), f)
				}
			}
		}
		var list resource.List[resource.Resource]
		e.do("GET", base+"/clusters", nil).expect(200).into(&list)
		if list.Total != 1 {
			t.Errorf("bad input changed something: %d clusters, want 1", list.Total)
		}
		// Same name twice: 409, naming the field.
		e.createCluster("dup-name")
		p := e.do("POST", base+"/clusters", clusterBody("dup-name")).problem(409, "HYPERFLEET-CNF-001")
		if !p.names("name") {
			t.Errorf("conflict names %v", p.fields())
		}
	})
}

func TestGetMissing(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.do("GET", base+"/clusters/0190c0de-0000-7000-8000-000000000000", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", base+"/clusters/not-a-uuid", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("PATCH", base+"/clusters/nope", `{"labels":{}}`).problem(404, "HYPERFLEET-NTF-001")
		e.do("DELETE", base+"/clusters/nope", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", base+"/clusters/nope/statuses", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("PUT", base+"/clusters/nope/statuses", report("validation", 1, "True")).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", base+"/clusters/nope/nodepools", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("POST", base+"/clusters/nope/nodepools", nodePoolBody("pool")).problem(404, "HYPERFLEET-NTF-001")
	})
}

func TestPatchGenerationRules(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"patchy","spec":{"a":1,"b":{"c":[1,2]}},"labels":{"x":"1"}}`).expect(201).resource()
		path := base + "/clusters/" + c.ID

		// Labels only: a bump (adapters render labels into what they apply).
		r := e.do("PATCH", path, `{"labels":{"x":"2"}}`).expect(200).resource()
		if r.Generation != 2 || r.Labels["x"] != "2" || !r.UpdatedTime.After(c.UpdatedTime) && !r.UpdatedTime.Equal(c.UpdatedTime) {
			t.Errorf("labels patch: gen %d labels %v", r.Generation, r.Labels)
		}
		// The same labels again: no bump.
		if r = e.do("PATCH", path, `{"labels":{"x":"2"}}`).expect(200).resource(); r.Generation != 2 {
			t.Errorf("unchanged labels bumped the generation to %d", r.Generation)
		}
		// Semantically equal spec (order, spacing, 1 vs 1.0): no bump.
		r = e.do("PATCH", path, `{"spec":{ "b":{"c":[1, 2.0]}, "a":1.0 }}`).expect(200).resource()
		if r.Generation != 2 {
			t.Errorf("equal spec bumped the generation to %d", r.Generation)
		}
		// Nothing at all: 200 and nothing changes.
		before := e.getCluster(c.ID)
		r = e.do("PATCH", path, `{}`).expect(200).resource()
		if r.Generation != 2 || !r.UpdatedTime.Equal(before.UpdatedTime) {
			t.Errorf("empty patch changed gen %d / updated_time %v -> %v", r.Generation, before.UpdatedTime, r.UpdatedTime)
		}
		// A real spec change: +1, Ready False at the new generation.
		r = e.do("PATCH", path, `{"spec":{"a":2}}`).expect(200).resource()
		if r.Generation != 3 || !strings.Contains(string(r.Spec), `"a"`) || cond(r, "Ready") != "False/AwaitingAdapters/0" {
			t.Errorf("spec patch: gen %d spec %s Ready %s", r.Generation, r.Spec, cond(r, "Ready"))
		}
		// Spec and labels together: one bump.
		r = e.do("PATCH", path, `{"spec":{"a":3},"labels":{}}`).expect(200).resource()
		if r.Generation != 4 || len(r.Labels) != 0 {
			t.Errorf("spec+labels patch: gen %d labels %v", r.Generation, r.Labels)
		}
		// Bad input changes nothing.
		e.do("PATCH", path, `{"spec":{"a":4},"name":"x"}`).problem(400, "HYPERFLEET-VAL-002")
		e.do("PATCH", path, `{"spec":null}`).problem(400, "HYPERFLEET-VAL-001")
		e.do("PATCH", path, `{"spec":[1]}`).problem(400, "HYPERFLEET-VAL-001")
		e.do("PATCH", path, `{"labels":{"a":1}}`).problem(400, "HYPERFLEET-VAL-002")
		e.do("PATCH", path, `{"labels":{"-bad":"x"}}`).problem(400, "HYPERFLEET-VAL-001")
		if g := e.getCluster(c.ID).Generation; g != 4 {
			t.Errorf("rejected patches changed the generation to %d", g)
		}
		var spec map[string]any
		_ = json.Unmarshal(e.getCluster(c.ID).Spec, &spec)
		if spec["a"] != float64(3) {
			t.Errorf("spec after rejected patches = %v", spec)
		}
	})
}

func TestNodePools(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c1, c2 := e.createCluster("cluster-one"), e.createCluster("cluster-two")
		np := e.createNodePool(c1.ID, "worker-pool")
		if np.Kind != "NodePool" || np.OwnerReferences == nil || np.OwnerReferences.ID != c1.ID || np.OwnerReferences.Kind != "Cluster" ||
			np.OwnerReferences.Href != c1.Href || np.Href != base+"/clusters/"+c1.ID+"/nodepools/"+np.ID {
			t.Errorf("node pool = %+v owner %+v", np, np.OwnerReferences)
		}
		e.createNodePool(c2.ID, "worker-pool") // same name, other cluster
		e.do("POST", base+"/clusters/"+c1.ID+"/nodepools", nodePoolBody("worker-pool")).problem(409, "HYPERFLEET-CNF-001")
		e.do("POST", base+"/clusters/"+c1.ID+"/nodepools", nodePoolBody("sixteen-chars-xx")).problem(400, "HYPERFLEET-VAL-001")
		e.do("POST", base+"/clusters/"+c1.ID+"/nodepools", clusterBody("cluster-kind")).problem(400, "HYPERFLEET-VAL-001")
		e.createNodePool(c1.ID, "gpu-pool")

		// A node pool is only reachable under its own cluster.
		e.do("GET", base+"/clusters/"+c1.ID+"/nodepools/"+np.ID, nil).expect(200)
		e.do("GET", base+"/clusters/"+c2.ID+"/nodepools/"+np.ID, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", base+"/clusters/"+np.ID, nil).problem(404, "HYPERFLEET-NTF-001")

		var l resource.List[resource.Resource]
		e.do("GET", base+"/clusters/"+c1.ID+"/nodepools", nil).expect(200).into(&l)
		if l.Kind != "NodePoolList" || l.Total != 2 {
			t.Errorf("c1 node pools = %d (%s)", l.Total, l.Kind)
		}
		e.do("GET", base+"/nodepools", nil).expect(200).into(&l)
		if l.Total != 3 {
			t.Errorf("all node pools = %d, want 3", l.Total)
		}
		e.do("GET", base+"/nodepools?search="+urlQuery("owner_references.id='"+c2.ID+"'"), nil).expect(200).into(&l)
		if l.Total != 1 || l.Items[0].OwnerReferences.ID != c2.ID {
			t.Errorf("node pools of c2 by search = %+v", l)
		}
		e.do("GET", base+"/clusters?search="+urlQuery("owner_references.id='x'"), nil).problem(400, "HYPERFLEET-VAL-004")

		r := e.do("PATCH", np.Href, `{"spec":{"replicas":5}}`).expect(200).resource()
		if r.Generation != 2 {
			t.Errorf("node pool spec patch gen = %d", r.Generation)
		}
	})
}

func TestListPagination(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for i := 0; i < 25; i++ {
			e.createCluster(fmt.Sprintf("cluster-%02d", i))
		}
		names := func(path string) ([]string, resource.List[resource.Resource]) {
			var l resource.List[resource.Resource]
			e.do("GET", path, nil).expect(200).into(&l)
			var out []string
			for _, it := range l.Items {
				out = append(out, it.Name)
			}
			return out, l
		}
		got, l := names(base + "/clusters")
		if l.Total != 25 || l.Size != 20 || l.Page != 1 || got[0] != "cluster-24" {
			t.Errorf("default page: total %d size %d first %s (want newest first)", l.Total, l.Size, got[0])
		}
		got, l = names(base + "/clusters?page=2")
		if l.Size != 5 || l.Page != 2 || got[4] != "cluster-00" {
			t.Errorf("page 2: size %d last %v", l.Size, got)
		}
		got, _ = names(base + "/clusters?pageSize=3&orderBy=name&order=asc")
		if strings.Join(got, ",") != "cluster-00,cluster-01,cluster-02" {
			t.Errorf("seed ordering = %v", got)
		}
		got, _ = names(base + "/clusters?size=3&order=" + urlQuery("name desc"))
		if strings.Join(got, ",") != "cluster-24,cluster-23,cluster-22" {
			t.Errorf("newer ordering = %v", got)
		}
		got, _ = names(base + "/clusters?size=2&page=2&order=" + urlQuery("name asc"))
		if strings.Join(got, ",") != "cluster-02,cluster-03" {
			t.Errorf("page 2 by name = %v", got)
		}
		got, l = names(base + "/clusters?page=9")
		if len(got) != 0 || l.Total != 25 || l.Size != 0 {
			t.Errorf("past the end: %v total %d", got, l.Total)
		}
		got, _ = names(base + "/clusters?size=100")
		if len(got) != 25 {
			t.Errorf("size=100 returned %d", len(got))
		}
		for _, q := range []string{"page=0", "page=-1", "page=x", "pageSize=0", "pageSize=101", "size=101", "size=abc",
			"size=5&pageSize=6", "orderBy=password", "order=" + urlQuery("name sideways"), "orderBy=name&order=up", "order=" + urlQuery("spec desc")} {
			e.do("GET", base+"/clusters?"+q, nil).problem(400, "HYPERFLEET-VAL-003")
		}
	})
}

func TestCompatPayloads(t *testing.T) {
	compat.Require(t, "that the upstream end-to-end payloads are accepted")
	eachBackend(t, func(t *testing.T, e *env) {
		dir := "../../../shared/compat/upstream-e2e-payloads"
		load := func(name string) string {
			raw := readFile(t, dir+"/"+name)
			return strings.ReplaceAll(raw, "{{.Random}}", fmt.Sprintf("%d", len(name)))
		}
		for _, f := range []string{"clusters/cluster-request.json", "clusters/cluster-request-small.json", "clusters/cluster-request-large.json"} {
			c := e.do("POST", base+"/clusters", load(f)).expect(201).resource()
			if f == "clusters/cluster-request.json" {
				r := e.do("PATCH", c.Href, load("clusters/cluster-patch.json")).expect(200).resource()
				if r.Generation != 2 {
					t.Errorf("cluster-patch.json: generation %d, want 2", r.Generation)
				}
				np := e.do("POST", c.Href+"/nodepools", load("nodepools/nodepool-request.json")).expect(201).resource()
				r = e.do("PATCH", np.Href, load("nodepools/nodepool-patch.json")).expect(200).resource()
				if r.Generation != 2 {
					t.Errorf("nodepool-patch.json: generation %d, want 2", r.Generation)
				}
			}
		}
	})
}
