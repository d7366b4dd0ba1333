//go:build integration

package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/resource"
)

// gatewayTenancy is the gateway example; its system secret
// ($SECRET, see withTenancy) is systemSecret.
const gatewayTenancy = `system_header: X-HyperFleet-System
system_secret_file: $SECRET
dimensions:
  - {header: X-Tenant-Org, key: org, required: true}
  - {header: X-Tenant-Project, key: project, required: false}
`

// systemSecret is what the system caller of gatewayTenancy sends.
const systemSecret = "api-test-system-secret-0123456789abcdef"

// withTenancy loads a tenancy file; $SECRET in it names a file holding
// systemSecret.
func withTenancy(t *testing.T, doc string, jwt bool) option {
	t.Helper()
	file := filepath.Join(t.TempDir(), "system-secret")
	if err := os.WriteFile(file, []byte(systemSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := tenancy.Parse("tenancy.yaml", []byte(strings.ReplaceAll(doc, "$SECRET", file)), jwt)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *apiserver.Options) { o.Server.Tenancy = cfg }
}

// caller is who sends a request: its headers and, with JWTs, its token.
type caller struct {
	name   string
	header http.Header
	token  string
}

func tenantCaller(name string, pairs ...string) caller {
	h := http.Header{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1])
	}
	return caller{name: name, header: h}
}

var (
	acme    = tenantCaller("own tenant", "X-Tenant-Org", "acme")
	globex  = tenantCaller("other tenant", "X-Tenant-Org", "globex")
	system  = tenantCaller("system caller", "X-HyperFleet-System", systemSecret)
	nobody  = tenantCaller("missing dimension", "X-Tenant-Project", "web")
	acmeWeb = tenantCaller("own tenant's project", "X-Tenant-Org", "acme", "X-Tenant-Project", "web")
)

// as sends a request as a caller.
func (e *env) as(c caller, method, path string, body any) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s as %s: %v", method, path, c.name, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return &response{t: e.t, method: method + " (" + c.name + ")", path: path, status: resp.StatusCode, header: resp.Header, body: raw}
}

// listed returns the ids of a list response's items and its total.
func listed(r *response) ([]string, int64) {
	r.t.Helper()
	var l struct {
		Total int64 `json:"total"`
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	r.expect(200).into(&l)
	ids := make([]string, 0, len(l.Items))
	for _, it := range l.Items {
		ids = append(ids, it.ID)
	}
	return ids, l.Total
}

// tenancyFixture is what the route matrix runs against: a cluster and a
// node pool of acme's, and a cluster of globex's of the same name.
type tenancyFixture struct {
	cluster, nodePool, other resource.Resource
}

func newTenancyFixture(t *testing.T, e *env) tenancyFixture {
	t.Helper()
	var f tenancyFixture
	f.cluster = e.as(acme, "POST", base+"/clusters", clusterBody("shared-name")).expect(201).resource()
	f.nodePool = e.as(acme, "POST", f.cluster.Href+"/nodepools", nodePoolBody("pool")).expect(201).resource()
	f.other = e.as(globex, "POST", base+"/clusters", clusterBody("shared-name")).expect(201).resource()
	return f
}

// route is one API route the matrix calls, with what each caller gets.
type route struct {
	method, path string
	body         any
	// want per caller name; a 403 or 404 is also checked for its code.
	want map[string]int
	// ids are checked for lists: what the own tenant, the other tenant
	// and the system caller see.
	lists bool
}

// TestTenancyRoutes runs every route of the default kinds against the
// four kinds of caller: the resource's own tenant, another tenant, a
// system caller and a caller missing the required dimension, on both
// databases. Another tenant's resource is 404 (never 403: its existence
// does not leak); writes of resources are the tenants', writes of
// statuses the system callers'.
func TestTenancyRoutes(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false))
		f := newTenancyFixture(t, e)
		c, np := f.cluster, f.nodePool
		read := map[string]int{acme.name: 200, globex.name: 404, system.name: 200, nobody.name: 403}
		list := map[string]int{acme.name: 200, globex.name: 200, system.name: 200, nobody.name: 403}
		statusWrite := map[string]int{acme.name: 403, globex.name: 403, system.name: 201, nobody.name: 403}
		routes := []route{
			{method: "GET", path: base + "/clusters", want: list, lists: true},
			{method: "GET", path: base + "/clusters?search=" + urlQuery("labels.environment='production'"), want: list, lists: true},
			{method: "GET", path: base + "/clusters?orderBy=name", want: list, lists: true},
			{method: "GET", path: c.Href, want: read},
			{method: "GET", path: c.Href + "/statuses", want: read},
			{method: "GET", path: base + "/nodepools", want: list, lists: true},
			{method: "GET", path: c.Href + "/nodepools", want: read, lists: true},
			{method: "GET", path: np.Href, want: read},
			{method: "GET", path: np.Href + "/statuses", want: read},
			{method: "GET", path: base + "/resources", want: list, lists: true},
			{method: "GET", path: base + "/resources/" + c.ID, want: read},
			{method: "GET", path: base + "/resources/" + np.ID, want: read},
			{method: "PUT", path: c.Href + "/statuses", body: report("validation", 1, "True"), want: statusWrite},
			{method: "POST", path: c.Href + "/statuses", body: report("landing-zone", 1, "True"), want: statusWrite},
			{method: "PUT", path: np.Href + "/statuses", body: report("np-configmap", 1, "True"), want: statusWrite},
			{method: "POST", path: np.Href + "/statuses", body: report("np-configmap", 1, "False"), want: statusWrite},
			// Adoption is the system callers'; the cluster has this
			// tenancy already, so it changes nothing.
			{method: "PUT", path: c.Href + "/tenancy", body: map[string]string{"org": "acme"},
				want: map[string]int{acme.name: 403, globex.name: 403, system.name: 200, nobody.name: 403}},
			{method: "PATCH", path: c.Href, body: map[string]any{"labels": map[string]string{"environment": "staging"}},
				want: map[string]int{acme.name: 200, globex.name: 404, system.name: 403, nobody.name: 403}},
			{method: "PATCH", path: np.Href, body: map[string]any{"spec": map[string]any{"replicas": 3}},
				want: map[string]int{acme.name: 200, globex.name: 404, system.name: 403, nobody.name: 403}},
			{method: "POST", path: c.Href + "/nodepools", body: nodePoolBody("second"),
				want: map[string]int{acme.name: 201, globex.name: 404, system.name: 403, nobody.name: 403}},
			{method: "POST", path: base + "/clusters", body: clusterBody("created-by"),
				want: map[string]int{acme.name: 201, globex.name: 201, system.name: 403, nobody.name: 403}},
			{method: "DELETE", path: np.Href, want: map[string]int{acme.name: 202, globex.name: 404, system.name: 403, nobody.name: 403}},
			{method: "POST", path: np.Href + "/force-delete", body: `{"reason":"test"}`,
				want: map[string]int{acme.name: 204, globex.name: 404, system.name: 403, nobody.name: 403}},
			{method: "DELETE", path: c.Href, want: map[string]int{acme.name: 202, globex.name: 404, system.name: 403, nobody.name: 403}},
			{method: "POST", path: c.Href + "/force-delete", body: `{"reason":"test"}`,
				want: map[string]int{acme.name: 204, globex.name: 404, system.name: 403, nobody.name: 403}},
		}
		for _, r := range routes {
			// The own tenant goes last: its writes change (or remove)
			// what the others were refused.
			for _, who := range []caller{globex, system, nobody, acme} {
				res := e.as(who, r.method, r.path, r.body)
				want := r.want[who.name]
				switch want {
				case 403:
					code := "HYPERFLEET-AUZ-001"
					if who.name == nobody.name {
						code = "HYPERFLEET-AUZ-002"
					}
					res.problem(403, code)
				case 404:
					res.problem(404, "HYPERFLEET-NTF-001")
				default:
					res.expect(want)
				}
				if r.lists && want == 200 {
					checkListScope(t, res, who, f)
				}
			}
		}
		// Every route refused the other tenant and the system caller's
		// writes without changing anything: the cluster is gone only
		// because its own tenant deleted it.
		e.as(system, "GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.as(system, "GET", f.other.Href, nil).expect(200)
	})
}

// checkListScope: a tenant's list holds its own resources only, a system
// caller's everyone's.
func checkListScope(t *testing.T, res *response, who caller, f tenancyFixture) {
	t.Helper()
	ids, total := listed(res)
	if int64(len(ids)) != total {
		t.Errorf("%s %s: %d items, total %d", res.method, res.path, len(ids), total)
	}
	has := func(id string) bool { return slices.Contains(ids, id) }
	isNodePools := strings.Contains(res.path, "/nodepools")
	own, theirs := f.cluster.ID, f.other.ID
	if isNodePools {
		own, theirs = f.nodePool.ID, ""
	}
	switch who.name {
	case acme.name:
		if !has(own) || theirs != "" && has(theirs) {
			t.Errorf("%s %s: the own tenant sees %v (own %s, other's %s)", res.method, res.path, ids, own, theirs)
		}
	case globex.name:
		if has(f.cluster.ID) || has(f.nodePool.ID) {
			t.Errorf("%s %s: another tenant sees acme's resources: %v", res.method, res.path, ids)
		}
		if !isNodePools && !has(f.other.ID) {
			t.Errorf("%s %s: the other tenant does not see its own cluster: %v", res.method, res.path, ids)
		}
	case system.name:
		if !has(own) || theirs != "" && !has(theirs) {
			t.Errorf("%s %s: the system caller does not see every tenant: %v", res.method, res.path, ids)
		}
	}
}

// Every resource records its tenancy and returns it; a child has its
// parent's. Names are unique per tenancy, and an optional dimension makes
// a tenancy of its own.
func TestTenancyRecordedAndNamesPerTenant(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false))
		c := e.as(acme, "POST", base+"/clusters", clusterBody("alpha")).expect(201).resource()
		if fmt.Sprint(c.Tenancy) != "map[org:acme]" {
			t.Errorf("tenancy in the create answer = %v", c.Tenancy)
		}
		np := e.as(acme, "POST", c.Href+"/nodepools", nodePoolBody("pool")).expect(201).resource()
		if fmt.Sprint(np.Tenancy) != "map[org:acme]" {
			t.Errorf("node pool tenancy = %v, want its cluster's", np.Tenancy)
		}
		if got := e.as(system, "GET", np.Href, nil).expect(200).resource(); fmt.Sprint(got.Tenancy) != "map[org:acme]" {
			t.Errorf("tenancy read back = %v", got.Tenancy)
		}
		// The same name twice in one tenancy is a conflict; in another
		// tenancy (another org, or the same org with a project) it is not.
		p := e.as(acme, "POST", base+"/clusters", clusterBody("alpha")).problem(409, "HYPERFLEET-CNF-001")
		if !p.names("name") {
			t.Errorf("conflict names %v", p.fields())
		}
		e.as(globex, "POST", base+"/clusters", clusterBody("alpha")).expect(201)
		web := e.as(acmeWeb, "POST", base+"/clusters", clusterBody("alpha")).expect(201).resource()
		if fmt.Sprint(web.Tenancy) != "map[org:acme project:web]" {
			t.Errorf("tenancy with the optional dimension = %v", web.Tenancy)
		}
		// A tenancy is every dimension's value: acme without a project
		// does not see acme's project web, nor the other way round.
		e.as(acme, "GET", web.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.as(acmeWeb, "GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		if ids, total := listed(e.as(acmeWeb, "GET", base+"/clusters", nil)); total != 1 || ids[0] != web.ID {
			t.Errorf("acme/web lists %v (total %d)", ids, total)
		}
		// A child of another tenant's parent cannot be made.
		e.as(globex, "POST", c.Href+"/nodepools", nodePoolBody("intruder")).problem(404, "HYPERFLEET-NTF-001")
		// Node pool names are per cluster, as always.
		e.as(acme, "POST", c.Href+"/nodepools", nodePoolBody("pool")).problem(409, "HYPERFLEET-CNF-001")
	})
}

// A tenant's search, order and pages see only its resources, with exact
// totals; continuation tokens walk them to the end.
func TestTenancySearchAndPages(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false))
		mine := map[string]bool{}
		for i := 0; i < 7; i++ {
			body := clusterBody(fmt.Sprintf("mine-%d", i))
			body["labels"] = map[string]string{"shard": fmt.Sprint(i % 2)}
			mine[e.as(acme, "POST", base+"/clusters", body).expect(201).resource().ID] = true
			body = clusterBody(fmt.Sprintf("theirs-%d", i))
			body["labels"] = map[string]string{"shard": fmt.Sprint(i % 2)}
			e.as(globex, "POST", base+"/clusters", body).expect(201)
		}
		for _, q := range []string{
			"",
			"&search=" + urlQuery("labels.shard='1'"),
			"&search=" + urlQuery("labels.shard='1' and status.conditions.Ready='False'"),
			"&search=" + urlQuery("name like 'mine-%' or name like 'theirs-%'"),
			"&orderBy=name",
			"&orderBy=name&order=desc",
			"&orderBy=created_time&order=asc",
		} {
			var seen []string
			var total int64 = -1
			next := base + "/clusters?size=2" + q
			for pages := 0; next != ""; pages++ {
				if pages > 10 {
					t.Fatalf("%s: more than 10 pages", q)
				}
				var l struct {
					Total int64  `json:"total"`
					Next  string `json:"next_page_token"`
					Items []resource.Resource
				}
				e.as(acme, "GET", next, nil).expect(200).into(&l)
				if total >= 0 && l.Total != total {
					t.Errorf("%s: total %d, then %d", q, total, l.Total)
				}
				total = l.Total
				for _, it := range l.Items {
					if !mine[it.ID] {
						t.Errorf("%s: acme sees %s (%s) of another tenant", q, it.Name, it.ID)
					}
					seen = append(seen, it.ID)
				}
				next = ""
				if l.Next != "" {
					next = base + "/clusters?size=2" + q + "&pageToken=" + url.QueryEscape(l.Next)
				}
			}
			if int64(len(seen)) != total || total == 0 {
				t.Errorf("%s: walked %d items, total %d", q, len(seen), total)
			}
			if q == "" && total != 7 {
				t.Errorf("acme's clusters: total %d, want 7", total)
			}
		}
		// The system caller's list is everyone's.
		if _, total := listed(e.as(system, "GET", base+"/clusters", nil)); total != 14 {
			t.Errorf("system caller's total %d, want 14", total)
		}
	})
}

// The refusals: a missing or invalid dimension is 403 HYPERFLEET-AUZ-002
// naming the header; roles are 403 HYPERFLEET-AUZ-001. Service endpoints
// stay outside tenancy.
func TestTenancyRefusals(t *testing.T) {
	e := newEnv(t, "sqlite", withTenancy(t, gatewayTenancy, false))
	for _, c := range []caller{
		nobody,
		tenantCaller("empty org", "X-Tenant-Org", ""),
		tenantCaller("bad org", "X-Tenant-Org", "acme/corp"),
		tenantCaller("long org", "X-Tenant-Org", strings.Repeat("a", 64)),
		tenantCaller("bad project", "X-Tenant-Org", "acme", "X-Tenant-Project", "we b"),
	} {
		p := e.as(c, "GET", base+"/clusters", nil).problem(403, "HYPERFLEET-AUZ-002")
		if len(p.Errors) != 1 || !strings.HasPrefix(p.Errors[0].Field, "header X-") {
			t.Errorf("%s: the refusal names %v: %s", c.name, p.fields(), p.Detail)
		}
	}
	p := e.as(acme, "PUT", base+"/clusters/00000000-0000-7000-8000-000000000000/statuses", report("validation", 1, "True")).problem(403, "HYPERFLEET-AUZ-001")
	if !strings.Contains(p.Detail, "only system callers") {
		t.Errorf("status write refusal: %s", p.Detail)
	}
	p = e.as(system, "POST", base+"/clusters", clusterBody("by-system")).problem(403, "HYPERFLEET-AUZ-001")
	if !strings.Contains(p.Detail, "may only write adapter statuses") {
		t.Errorf("system create refusal: %s", p.Detail)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/api/hyperfleet", base + "/openapi"} {
		e.as(nobody, "GET", path, nil).expect(200)
	}
}

// Issue 43: in gateway style anyone who reached the API directly was a
// system caller by sending X-HyperFleet-System: true, and listed every
// tenant's clusters. The system header now carries the system secret: a
// bare true, a wrong secret or the header twice is 401
// HYPERFLEET-AUT-002 naming the header (never echoing the value) and
// changes nothing; the secret makes a system caller that sees every
// tenant; false is a tenant.
func TestTenancyGatewaySystemSecret(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false))
		all := map[string]bool{}
		for i := 0; i < 8; i++ {
			org := tenantCaller("tenant", "X-Tenant-Org", fmt.Sprintf("org-%d", i))
			all[e.as(org, "POST", base+"/clusters", clusterBody(fmt.Sprintf("c-%d", i))).expect(201).resource().ID] = true
		}
		twice := caller{name: "the secret twice", header: http.Header{}}
		twice.header.Add("X-HyperFleet-System", systemSecret)
		twice.header.Add("X-HyperFleet-System", systemSecret)
		wrong := systemSecret[:len(systemSecret)-1] + "X"
		for _, c := range []struct {
			who  caller
			says string
		}{
			{tenantCaller("a bare true", "X-HyperFleet-System", "true"), "is true, which makes no system caller"},
			{tenantCaller("a bare true with a tenant's header", "X-HyperFleet-System", "true", "X-Tenant-Org", "org-0"), "makes no system caller"},
			{tenantCaller("a wrong secret", "X-HyperFleet-System", wrong), "is not the system secret"},
			{tenantCaller("a prefix of the secret", "X-HyperFleet-System", systemSecret[:32]), "is not the system secret"},
			{twice, "sent 2 times"},
		} {
			for _, r := range []struct {
				method, path string
				body         any
			}{
				{"GET", base + "/clusters", nil},
				{"GET", base + "/resources", nil},
				{"PUT", base + "/clusters/" + firstKey(all) + "/statuses", report("validation", 1, "True")},
			} {
				res := e.as(c.who, r.method, r.path, r.body)
				p := res.problem(401, "HYPERFLEET-AUT-002")
				if len(p.Errors) != 1 || p.Errors[0].Field != "header X-HyperFleet-System" || !strings.Contains(p.Detail, c.says) {
					t.Errorf("%s %s as %s: %s, errors %v; want the header named and %q", r.method, r.path, c.who.name, p.Detail, p.fields(), c.says)
				}
				for _, v := range []string{wrong, systemSecret[:32]} {
					if bytes.Contains(res.body, []byte(v)) {
						t.Errorf("%s as %s: the answer echoes the value sent: %s", r.method, c.who.name, res.body)
					}
				}
			}
		}
		// Nothing the refused callers sent was written.
		var statuses struct {
			Items []any `json:"items"`
		}
		e.as(system, "GET", base+"/clusters/"+firstKey(all)+"/statuses", nil).expect(200).into(&statuses)
		if len(statuses.Items) != 0 {
			t.Errorf("a refused status report was stored: %+v", statuses.Items)
		}
		// The secret is a system caller: every tenant's clusters.
		ids, total := listed(e.as(system, "GET", base+"/clusters", nil))
		if total != int64(len(all)) || len(ids) != len(all) {
			t.Errorf("the system caller lists %d (total %d), want every tenant's %d", len(ids), total, len(all))
		}
		for _, id := range ids {
			delete(all, id)
		}
		if len(all) != 0 {
			t.Errorf("the system caller does not see %v", all)
		}
		e.as(system, "PUT", base+"/clusters/"+ids[0]+"/statuses", report("validation", 1, "True")).expect(201)
		// false (in any case) is not a system caller: a tenant, or refused
		// without a tenancy.
		for _, v := range []string{"false", "FALSE"} {
			tenant := tenantCaller("false with org-3", "X-HyperFleet-System", v, "X-Tenant-Org", "org-3")
			if ids, total := listed(e.as(tenant, "GET", base+"/clusters", nil)); total != 1 || len(ids) != 1 {
				t.Errorf("%s: lists %v (total %d), want org-3's cluster only", v, ids, total)
			}
			e.as(tenantCaller("false alone", "X-HyperFleet-System", v), "GET", base+"/clusters", nil).problem(403, "HYPERFLEET-AUZ-002")
		}
	})
}

// firstKey is a map's smallest key.
func firstKey(m map[string]bool) string {
	keys := slices.Sorted(maps.Keys(m))
	return keys[0]
}

// Resources stored before tenancy was turned on belong to no tenant:
// only system callers see them, and tenants may reuse their names.
func TestTenancyTurnedOnLater(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b)
		old := e.createCluster("before")
		if bytes.Contains(e.do("GET", old.Href, nil).expect(200).body, []byte(`"tenancy"`)) {
			t.Error("a body without tenancy carries a tenancy field")
		}
		e2 := e.restart(withTenancy(t, gatewayTenancy, false))
		e2.as(acme, "GET", old.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e2.as(system, "GET", old.Href, nil).expect(200)
		if ids, _ := listed(e2.as(acme, "GET", base+"/clusters", nil)); len(ids) != 0 {
			t.Errorf("a tenant lists resources of no tenant: %v", ids)
		}
		e2.as(acme, "POST", base+"/clusters", clusterBody("before")).expect(201)
	})
}

func TestTenancyConfigErrorsStopTheAPI(t *testing.T) {
	o := newEnvOptions(t)
	o.Server.Tenancy = &tenancy.Config{Dimensions: []tenancy.Dimension{{Key: "org", Claim: "org_id", Required: true}}, SystemHeader: "X-S"}
	if _, err := buildApp(o); err == nil || !strings.Contains(err.Error(), "dimensions[0].claim") || !strings.Contains(err.Error(), "--jwt-enabled") {
		t.Errorf("a claim dimension without JWTs: %v", err)
	}
	// Issue 43: a system header without a secret made anyone who reached
	// the API a system caller; the API does not start with one.
	o = newEnvOptions(t)
	o.Server.Tenancy = &tenancy.Config{Dimensions: []tenancy.Dimension{{Key: "org", Header: "X-Org", Required: true}}, SystemHeader: "X-S"}
	if _, err := buildApp(o); err == nil || !strings.Contains(err.Error(), "system_secret_file: is not set") {
		t.Errorf("a system header without a secret: %v", err)
	}
	// Issue 43: with JWTs a header any token holder can send must not
	// make system callers, and with two issuers a system identity must
	// name its issuer.
	o = newEnvOptions(t)
	o.Auth = auth.Config{Enabled: true, Issuer: "https://users", JWKSURL: "http://127.0.0.1:1/keys",
		Issuers: []auth.Issuer{{Issuer: "https://services", JWKSURL: "http://127.0.0.1:1/keys"}}}
	o.Server.Tenancy = &tenancy.Config{Dimensions: []tenancy.Dimension{{Key: "org", Claim: "org_id", Required: true}}, SystemHeader: "X-S",
		SystemIdentities: []tenancy.SystemIdentity{{Identity: "svc-adapter"}}}
	_, err := buildApp(o)
	if err == nil || !strings.Contains(err.Error(), "system_header: with JWT authentication on") || !strings.Contains(err.Error(), "names no issuer") {
		t.Errorf("a system header and an unbound identity with two issuers: %v", err)
	}
}
