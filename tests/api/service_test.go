package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/openapi"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/resource"
)

func TestServiceEndpoints(t *testing.T) {
	e := newEnv(t, store.BackendSQLite)
	var h struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	e.do("GET", "/healthz", nil).expect(200).into(&h)
	if h.Status != "ok" {
		t.Errorf("healthz = %+v", h)
	}
	e.do("GET", "/readyz", nil).expect(200).into(&h)
	if h.Status != "ok" || h.Checks["database"] != "ok" {
		t.Errorf("readyz = %+v", h)
	}
	var meta map[string]any
	e.do("GET", "/api/hyperfleet", nil).expect(200).into(&meta)
	if meta["kind"] != "API" || meta["version"] != "test" || meta["href"] != "/api/hyperfleet" {
		t.Errorf("metadata = %v", meta)
	}
	page := e.do("GET", base+"/openapi.html", nil).expect(200)
	if !strings.Contains(page.header.Get("Content-Type"), "text/html") || !strings.Contains(string(page.body), "fetch('openapi')") {
		t.Errorf("openapi.html: %s", page.header.Get("Content-Type"))
	}

	// Unknown paths and methods are problem documents too.
	e.do("GET", "/nope", nil).problem(404, "HYPERFLEET-NTF-002")
	e.do("GET", base+"/clusters/a/b/c", nil).problem(404, "HYPERFLEET-NTF-002")
	e.do("DELETE", base+"/clusters", nil).problem(405, "HYPERFLEET-NTF-003")
	e.do("PUT", base+"/clusters/x", `{}`).problem(405, "HYPERFLEET-NTF-003")

	// Content type and size.
	req, _ := http.NewRequest("POST", e.url+base+"/clusters", strings.NewReader(`<cluster/>`))
	req.Header.Set("Content-Type", "application/xml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("xml body: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	big := `{"kind":"Cluster","name":"big","spec":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`
	e.do("POST", base+"/clusters", big).problem(413, "HYPERFLEET-VAL-006")

	// A dependency check can be excluded by name (a probe that must not
	// follow Temporal excludes workflow-engine).
	e.app.Server.AddReadinessCheck(apiserver.Check{Name: "workflow-engine", Check: func(context.Context) error { return errors.New("temporal unreachable") }})
	e.do("GET", "/readyz", nil).expect(503).into(&h)
	if h.Checks["workflow-engine"] != "unavailable" || h.Checks["database"] != "ok" {
		t.Errorf("readyz with the workflow engine down = %+v", h)
	}
	h.Checks = nil
	e.do("GET", "/readyz?exclude=workflow-engine", nil).expect(200).into(&h)
	if _, ok := h.Checks["workflow-engine"]; ok || h.Checks["database"] != "ok" {
		t.Errorf("readyz?exclude=workflow-engine = %+v", h)
	}

	// Readiness follows the database.
	e.app.Store.Close()
	e.do("GET", "/readyz?exclude=workflow-engine", nil).expect(503)
	e.do("GET", "/readyz", nil).expect(503).into(&h)
	if h.Status != "unavailable" || !strings.HasPrefix(h.Checks["database"], "unavailable") {
		t.Errorf("readyz with the database closed = %+v", h)
	}
	// A database fault is a 500 problem that leaks nothing.
	e.do("GET", base+"/clusters", nil).problem(500, "HYPERFLEET-INT-001")
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, store.BackendSQLite)
	c := e.createCluster("measured")
	e.getCluster(c.ID)
	e.report(c, report("validation", 1, "True")).expect(201)
	e.report(c, report("someone-else", 1, "True")).expect(201)
	e.do("GET", base+"/clusters/nope", nil)
	body := string(e.do("GET", "/metrics", nil).expect(200).body)
	for _, want := range []string{
		`hyperfleet_api_requests_total{code="201",method="POST",route="/api/hyperfleet/v1/clusters"} 1`,
		`hyperfleet_api_requests_total{code="200",method="GET",route="/api/hyperfleet/v1/clusters/:cluster_id"} 1`,
		`hyperfleet_api_requests_total{code="404",method="GET",route="/api/hyperfleet/v1/clusters/:cluster_id"} 1`,
		`hyperfleet_api_request_duration_seconds_bucket{code="201",method="POST",route="/api/hyperfleet/v1/clusters"`,
		`hyperfleet_api_status_reports_total{adapter="validation",kind="Cluster",outcome="stored"} 1`,
		`hyperfleet_api_status_reports_total{adapter="unregistered",kind="Cluster",outcome="stored"} 1`,
		`go_sql_open_connections{db_name="hyperfleet"}`,
		`go_sql_wait_count_total{db_name="hyperfleet"}`,
		// The fleet gauges: the creation waits in the outbox (no relay
		// here), and the cluster is not Ready (landing-zone has not
		// reported).
		"hyperfleet_outbox_pending 1\n",
		"hyperfleet_outbox_oldest_seconds ",
		`hyperfleet_resources_not_reconciled{kind="Cluster"} 1` + "\n",
		`hyperfleet_resources_not_reconciled{kind="NodePool"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// The OpenAPI document describes exactly the routes the router serves.
func TestOpenAPIMatchesRouter(t *testing.T) {
	e := newEnv(t, store.BackendSQLite)
	docOps, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	routes := e.app.Server.Routes()
	if strings.Join(docOps, "\n") != strings.Join(routes, "\n") {
		t.Errorf("router and OpenAPI document differ\nrouter:\n  %s\ndocument:\n  %s", strings.Join(routes, "\n  "), strings.Join(docOps, "\n  "))
	}
	served := e.do("GET", base+"/openapi", nil).expect(200)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(served.body)
	if err != nil {
		t.Fatalf("served document does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("served document is not valid OpenAPI 3: %v", err)
	}
	// The status codes each handler answers with are documented.
	documented := map[string][]string{
		"createCluster":        {"201", "400", "401", "409", "413", "415"},
		"getCluster":           {"200", "404"},
		"patchCluster":         {"200", "400", "404", "409"},
		"deleteCluster":        {"202", "404"},
		"forceDeleteCluster":   {"204", "400", "404", "409"},
		"putClusterStatus":     {"201", "204", "400", "404"},
		"postClusterStatus":    {"201", "204", "400", "404"},
		"assignClusterTenancy": {"200", "400", "403", "404", "409"},
		"listClusters":         {"200", "400"},
		"createNodePool":       {"201", "400", "404", "409"},
		"getNodePool":          {"200", "404"},
		"deleteNodePool":       {"202", "404"},
		"forceDeleteNodePool":  {"204", "400", "404", "409"},
		"putNodePoolStatus":    {"201", "204", "400", "404"},
		"listNodePoolStatuses": {"200", "400", "404"},
		"readyz":               {"200", "503"},
	}
	seen := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, code := range documented[op.OperationID] {
				if op.Responses.Value(code) == nil {
					t.Errorf("%s does not document %s", op.OperationID, code)
				}
			}
			seen[op.OperationID] = true
		}
	}
	for id := range documented {
		if !seen[id] {
			t.Errorf("operation %s missing from the document", id)
		}
	}
}

func TestSpecSchemaValidation(t *testing.T) {
	strict := filepath.Join(t.TempDir(), "schema.yaml")
	if err := os.WriteFile(strict, []byte(`openapi: 3.0.0
info: {title: strict, version: "1"}
paths: {}
components:
  schemas:
    ClusterSpec:
      type: object
      required: [platform]
      properties:
        platform:
          type: object
          required: [type]
          properties:
            type: {type: string, enum: [gcp, aws]}
        nodes: {type: integer, minimum: 1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, func(o *apiserver.Options) { o.SpecSchema = strict })
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"good","spec":{"platform":{"type":"gcp"},"nodes":3}}`).expect(201)
		p := e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"bad","spec":{"platform":{"type":"azure"},"nodes":0}}`).problem(400, "HYPERFLEET-VAL-007")
		if !p.names("spec.platform.type") || !p.names("spec.nodes") {
			t.Errorf("schema problem names %v", p.fields())
		}
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"bad","spec":{}}`).problem(400, "HYPERFLEET-VAL-007")
		c := e.createClusterWithSpec("patched", `{"platform":{"type":"aws"}}`)
		e.do("PATCH", c.Href, `{"spec":{"platform":{}}}`).problem(400, "HYPERFLEET-VAL-007")
		// NodePoolSpec is not in this schema: node pools are not validated.
		e.do("POST", c.Href+"/nodepools", `{"kind":"NodePool","name":"any","spec":{"whatever":true}}`).expect(201)
	})
	// The upstream example schema (permissive) loads and accepts the upstream payloads.
	compat.Require(t, "that the upstream example spec schema loads and accepts the upstream payloads")
	e := newEnv(t, store.BackendSQLite, func(o *apiserver.Options) {
		o.SpecSchema = compat.Path("upstream-adapter-examples", "api-validation-schema.yaml")
	})
	payload := readFile(t, compat.Path("upstream-e2e-payloads", "clusters", "cluster-request-small.json"))
	e.do("POST", base+"/clusters", strings.ReplaceAll(payload, "{{.Random}}", "1")).expect(201)
}

func (e *env) createClusterWithSpec(name, spec string) resource.Resource {
	e.t.Helper()
	return e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"`+name+`","spec":`+spec+`}`).expect(201).resource()
}

// Adding an adapter to the registered list takes effect on stored
// resources at the next start.
func TestRegistrationChangeReaggregates(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withAdapters([]string{"validation"}, []string{}))
		c := e.createCluster("registered")
		e.report(c, report("validation", 1, "True")).expect(201)
		e.expectCond(c.ID, "Ready", "True/ResourceReady/1")

		e2 := e.restart(withAdapters([]string{"validation", "dns"}, []string{}))
		r := e2.expectCond(c.ID, "Ready", "False/AdaptersReconciling/1")
		if got := cond(r, "DnsSuccessful"); got != "False/AwaitingAdapters/0" {
			t.Errorf("DnsSuccessful = %s", got)
		}
		if got := cond(r, "Available"); got != "True/ResourceAvailable/1" {
			t.Errorf("Available after adding an adapter = %s, want the previous True kept", got)
		}
		e2.report(c, report("dns", 1, "True")).expect(201)
		e2.expectCond(c.ID, "Ready", "True/ResourceReady/1")
	})
}

func TestMissingRegistrationRefusesToStart(t *testing.T) {
	o := newEnvOptions(t)
	delete(o.Registered, resource.KindNodePool)
	_, err := buildApp(o)
	if err == nil || !strings.Contains(err.Error(), "HYPERFLEET_NODEPOOL_ADAPTERS is not set") {
		t.Errorf("start without node pool adapters: %v", err)
	}
}

func TestListResponseShape(t *testing.T) {
	e := newEnv(t, store.BackendSQLite)
	var raw map[string]json.RawMessage
	e.do("GET", base+"/clusters", nil).expect(200).into(&raw)
	for _, k := range []string{"kind", "page", "size", "total", "items"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("list lacks %q", k)
		}
	}
	if string(raw["items"]) != "[]" {
		t.Errorf("empty list items = %s, want []", raw["items"])
	}
}

func newEnvOptions(t *testing.T) apiserver.Options {
	return apiserver.Options{
		Store:      storeConfig(t, store.BackendSQLite),
		Registered: map[string][]string{resource.KindCluster: {"validation"}, resource.KindNodePool: {}},
		Logger:     zerolog.Nop(),
	}
}

func buildApp(o apiserver.Options) (*apiserver.App, error) {
	app, err := apiserver.Build(context.Background(), o)
	if err == nil {
		app.Close()
	}
	return app, err
}
