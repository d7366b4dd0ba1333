package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/openapi"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/resource/kindsfile"
)

const exampleKinds = "../../deploy/kinds/example-kinds.yaml"

// withExampleKinds serves the shipped example kinds file; Cluster and
// NodePool keep the harness's adapters, the other kinds their
// required_adapters.
func withExampleKinds(t *testing.T) option {
	t.Helper()
	tab, err := kindsfile.Load(exampleKinds)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *apiserver.Options) { o.Kinds = tab.Kinds }
}

// withKinds serves a kinds file given as text.
func withKinds(t *testing.T, yaml string) option {
	t.Helper()
	tab, err := kindsfile.Parse("kinds.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return func(o *apiserver.Options) {
		o.Kinds = tab.Kinds
		o.Registered = nil
	}
}

// A configured kind without parent (WifConfig) and one with a restricting
// parent (Version under Channel) get the routes and rules clusters and
// node pools have.
func TestConfiguredKinds(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		// Without parent: CRUD at /wifconfigs.
		w := e.do("POST", base+"/wifconfigs", map[string]any{"kind": "WifConfig", "name": "wif-one", "spec": map[string]any{"projectId": "p"}}).expect(201)
		wif := w.resource()
		if wif.Kind != "WifConfig" || wif.Href != base+"/wifconfigs/"+wif.ID || w.header.Get("Location") != wif.Href || wif.OwnerReferences != nil {
			t.Fatalf("created %+v", wif)
		}
		if got := e.do("GET", wif.Href, nil).expect(200).resource(); got.ID != wif.ID || got.Name != "wif-one" {
			t.Fatalf("get %+v", got)
		}
		var list resource.List[resource.Resource]
		e.do("GET", base+"/wifconfigs?search="+urlQuery("name='wif-one'"), nil).expect(200).into(&list)
		if list.Kind != "WifConfigList" || list.Total != 1 || list.Items[0].ID != wif.ID {
			t.Fatalf("list %+v", list)
		}
		if got := e.do("PATCH", wif.Href, `{"spec":{"projectId":"q"}}`).expect(200).resource(); got.Generation != 2 {
			t.Fatalf("patch: generation %d, want 2", got.Generation)
		}
		e.do("POST", base+"/wifconfigs", map[string]any{"kind": "Cluster", "name": "wif-two", "spec": map[string]any{}}).problem(400, "HYPERFLEET-VAL-001")
		e.do("POST", base+"/wifconfigs", map[string]any{"kind": "WifConfig", "name": "wif-one", "spec": map[string]any{}}).problem(409, "HYPERFLEET-CNF-001")
		e.do("GET", base+"/wifconfigs/not-an-id", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("PUT", wif.Href+"/statuses", report("wif-adapter", 2, "True")).expect(201)
		var statuses resource.List[resource.AdapterStatus]
		e.do("GET", wif.Href+"/statuses", nil).expect(200).into(&statuses)
		if statuses.Total != 1 {
			t.Fatalf("statuses %+v", statuses)
		}
		// No adapters are registered: deletion completes at once.
		e.do("DELETE", wif.Href, nil).expect(202)
		e.do("GET", wif.Href, nil).problem(404, "HYPERFLEET-NTF-001")

		// With parent: Version under Channel, restrict.
		ch := e.do("POST", base+"/channels", map[string]any{"kind": "Channel", "name": "stable", "spec": map[string]any{}}).expect(201).resource()
		v := e.do("POST", ch.Href+"/versions", map[string]any{"kind": "Version", "name": "v4-17", "spec": map[string]any{"raw_version": "4.17.0"}}).expect(201).resource()
		if v.Href != base+"/channels/"+ch.ID+"/versions/"+v.ID || v.OwnerReferences == nil || v.OwnerReferences.Kind != "Channel" || v.OwnerReferences.ID != ch.ID || v.OwnerReferences.Href != ch.Href {
			t.Fatalf("version %+v", v)
		}
		e.do("GET", base+"/versions", nil).expect(200).into(&list)
		if list.Kind != "VersionList" || list.Total != 1 {
			t.Fatalf("flat versions %+v", list)
		}
		e.do("GET", ch.Href+"/versions", nil).expect(200).into(&list)
		if list.Total != 1 || list.Items[0].ID != v.ID {
			t.Fatalf("versions of the channel %+v", list)
		}
		other := e.do("POST", base+"/channels", map[string]any{"kind": "Channel", "name": "fast", "spec": map[string]any{}}).expect(201).resource()
		e.do("GET", other.Href+"/versions/"+v.ID, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("POST", base+"/channels/"+"00000000-0000-7000-8000-000000000000"+"/versions", map[string]any{"kind": "Version", "name": "v-one", "spec": map[string]any{}}).problem(404, "HYPERFLEET-NTF-001")

		// restrict: the channel cannot go while the version lives.
		p := e.do("DELETE", ch.Href, nil).problem(409, "HYPERFLEET-CNF-004")
		if !strings.Contains(p.Detail, "v4-17") || !strings.Contains(p.Detail, v.ID) {
			t.Fatalf("restrict detail %q does not name the version", p.Detail)
		}
		if got := e.do("GET", ch.Href, nil).expect(200).resource(); got.DeletedTime != nil {
			t.Fatal("a refused delete marked the channel deleting")
		}
		e.do("DELETE", v.Href, nil).expect(202)
		e.do("DELETE", ch.Href, nil).expect(202)
		e.do("GET", ch.Href, nil).problem(404, "HYPERFLEET-NTF-001")
	}, withExampleKinds(t))
}

// Cascade reaches any depth: deleting the root of a three-level chain
// marks every descendant deleting, children before parents, and the
// subtree is removed once adapters have nothing left to finalize.
func TestCascadeAtAnyDepth(t *testing.T) {
	const kinds = `
entities:
  - {kind: Region, plural: regions, required_adapters: [region-adapter]}
  - {kind: Zone, plural: zones, parent_kind: Region, required_adapters: []}
  - {kind: Rack, plural: racks, parent_kind: Zone, required_adapters: []}
`
	eachBackend(t, func(t *testing.T, e *env) {
		region := e.do("POST", base+"/regions", map[string]any{"kind": "Region", "name": "eu-west", "spec": map[string]any{}}).expect(201).resource()
		zone := e.do("POST", region.Href+"/zones", map[string]any{"kind": "Zone", "name": "eu-west-1a", "spec": map[string]any{}}).expect(201).resource()
		rack := e.do("POST", base+"/zones/"+zone.ID+"/racks", map[string]any{"kind": "Rack", "name": "rack-01", "spec": map[string]any{}}).expect(201).resource()
		if rack.Href != base+"/zones/"+zone.ID+"/racks/"+rack.ID {
			t.Fatalf("rack href %s", rack.Href)
		}
		e.do("DELETE", region.Href, nil).expect(202)
		// Zone and rack have no adapters: removed at once. The region waits
		// for its adapter to finalize.
		e.do("GET", zone.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", rack.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		got := e.do("GET", region.Href, nil).expect(200).resource()
		if got.DeletedTime == nil {
			t.Fatal("region not marked deleting")
		}
	}, withKinds(t, kinds))
}

// The document describes exactly the routes served for the example kinds.
func TestOpenAPIMatchesRouterForExampleKinds(t *testing.T) {
	e := newEnv(t, store.BackendSQLite, withExampleKinds(t))
	served := e.do("GET", base+"/openapi", nil).expect(200)
	docOps, err := openapi.OperationsOf(served.body)
	if err != nil {
		t.Fatal(err)
	}
	routes := e.app.Server.Routes()
	if strings.Join(docOps, "\n") != strings.Join(routes, "\n") {
		t.Errorf("router and OpenAPI document differ\nrouter:\n  %s\ndocument:\n  %s", strings.Join(routes, "\n  "), strings.Join(docOps, "\n  "))
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(served.body)
	if err != nil {
		t.Fatalf("served document does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("served document is not valid OpenAPI 3: %v", err)
	}
	for _, name := range []string{"Version", "VersionList", "VersionCreateRequest", "WifConfig", "Channel", "Cluster", "NodePool"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("schema %s missing", name)
		}
	}
	if op := doc.Paths.Find(base + "/channels/{channel_id}/versions"); op == nil || op.Post == nil || op.Post.OperationID != "createVersion" {
		t.Errorf("createVersion missing: %+v", op)
	}
}

// Upstream's payloads for the example kinds are accepted as shipped.
func TestCompatPayloadsForExampleKinds(t *testing.T) {
	compat.Require(t, "that the upstream end-to-end payloads of the example kinds are accepted")
	eachBackend(t, func(t *testing.T, e *env) {
		dir := compat.Path("upstream-e2e-payloads")
		load := func(name string) string {
			return strings.ReplaceAll(readFile(t, dir+"/"+name), "{{.Random}}", fmt.Sprintf("%d", len(name)))
		}
		ch := e.do("POST", base+"/channels", load("channels/channel-request.json")).expect(201).resource()
		e.do("POST", ch.Href+"/versions", load("versions/version-request.json")).expect(201)
		e.do("POST", base+"/wifconfigs", load("wifconfigs/wifconfig-request.json")).expect(201)
	}, withExampleKinds(t))
}
