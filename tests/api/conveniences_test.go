package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver/compression"
	"github.com/hyperfleet/hyperfleet/resource"
)

// doEncoded sends a request with the Accept-Encoding given ("" sends
// none) and returns the body as it came over the wire: its transport never
// asks for gzip itself nor decodes.
func (e *env) doEncoded(method, path, acceptEncoding string) *response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &response{t: e.t, method: method, path: path, status: resp.StatusCode, header: resp.Header, body: raw}
}

func gunzip(t *testing.T, what string, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not gzip: %v", what, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: gzip stream: %v", what, err)
	}
	return out
}

func expectIdentity(t *testing.T, r *response) {
	t.Helper()
	if ce := r.header.Get("Content-Encoding"); ce != "" {
		t.Errorf("%s %s: Content-Encoding %q, want none", r.method, r.path, ce)
	}
	if !json.Valid(r.body) {
		t.Errorf("%s %s: body is not plain JSON: %.80q", r.method, r.path, r.body)
	}
}

// The contract: "a response of at least 8 KiB is gzip-compressed when the
// request's Accept-Encoding accepts gzip"; smaller ones, errors and
// responses already encoded go out as they are.
func TestResponsesCompressedWhenAsked(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		var first resource.Resource
		for i := range 20 {
			body := clusterBody(fmt.Sprintf("gz-%02d", i))
			body["spec"] = map[string]any{"region": "us-east-1", "nodes": i + 1, "description": strings.Repeat("a fleet cluster ", 8)}
			c := e.do("POST", base+"/clusters", body).expect(201).resource()
			if i == 0 {
				first = c
			}
		}
		const list = base + "/clusters?pageSize=20"
		plain := e.doEncoded("GET", list, "").expect(200)
		expectIdentity(t, plain)
		if len(plain.body) < compression.MinSize {
			t.Fatalf("the 20-item list is %d bytes, under the %d the test needs", len(plain.body), compression.MinSize)
		}
		for _, accept := range []string{"gzip", "deflate, gzip;q=0.5", "*"} {
			gz := e.doEncoded("GET", list, accept).expect(200)
			if gz.header.Get("Content-Encoding") != "gzip" || !slices.Contains(gz.header.Values("Vary"), "Accept-Encoding") {
				t.Fatalf("Accept-Encoding %q: headers %v, want Content-Encoding gzip and Vary Accept-Encoding", accept, gz.header)
			}
			if cl := gz.header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(gz.body)) {
				t.Errorf("Accept-Encoding %q: Content-Length %s for a %d-byte body", accept, cl, len(gz.body))
			}
			if len(gz.body)*4 > len(plain.body) {
				t.Errorf("Accept-Encoding %q: %d bytes compressed to %d, want under a quarter", accept, len(plain.body), len(gz.body))
			}
			if got := gunzip(t, accept, gz.body); !bytes.Equal(got, plain.body) {
				t.Errorf("Accept-Encoding %q: decompressed to %d bytes that differ from the %d of the plain list", accept, len(got), len(plain.body))
			}
		}
		// Refused by weight, or not offered: the plain list.
		for _, accept := range []string{"gzip;q=0", "gzip;q=0, *", "identity", "br"} {
			r := e.doEncoded("GET", list, accept).expect(200)
			expectIdentity(t, r)
			if !bytes.Equal(r.body, plain.body) {
				t.Errorf("Accept-Encoding %q: the body differs from the plain list", accept)
			}
		}
		// A single resource is under 8 KiB: as it is.
		one := e.doEncoded("GET", base+"/clusters/"+first.ID, "gzip").expect(200)
		expectIdentity(t, one)
		if r := one.resource(); r.ID != first.ID {
			t.Errorf("GET one: id %s, want %s", r.ID, first.ID)
		}
		// Errors stay plain problem documents.
		missing := e.doEncoded("GET", base+"/clusters/0190c0de-0000-7000-8000-000000000000", "gzip")
		missing.problem(404, "HYPERFLEET-NTF-001")
		expectIdentity(t, missing)
		// The OpenAPI document is large: compressed.
		doc := e.doEncoded("GET", base+"/openapi", "gzip").expect(200)
		if doc.header.Get("Content-Encoding") != "gzip" || !json.Valid(gunzip(t, "openapi", doc.body)) {
			t.Errorf("openapi: Content-Encoding %q", doc.header.Get("Content-Encoding"))
		}
		// Metrics come gzipped by their own handler: compressed once, not twice.
		m := e.doEncoded("GET", "/metrics", "gzip").expect(200)
		if m.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("metrics: Content-Encoding %q", m.header.Get("Content-Encoding"))
		}
		if text := gunzip(t, "metrics", m.body); !bytes.Contains(text, []byte("# HELP")) {
			t.Errorf("metrics decompressed once is not the text format: %.80q", text)
		}
	})
}

// keys lists an object's keys, sorted.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

type rawList struct {
	Kind  string            `json:"kind"`
	Page  int               `json:"page"`
	Size  int               `json:"size"`
	Total int               `json:"total"`
	Items []json.RawMessage `json:"items"`
}

// The contract: fields= "returns only the named fields of each item";
// "kind, id and href are always returned"; "a list keeps its envelope".
func TestFieldsProjectResources(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		var clusters []resource.Resource
		for i := range 3 {
			body := clusterBody(fmt.Sprintf("fields-%d", i))
			body["spec"] = map[string]any{"region": "eu-west-1", "nodes": 9007199254740993, "platform": map[string]any{"type": "gcp", "project": "p"}}
			clusters = append(clusters, e.do("POST", base+"/clusters", body).expect(201).resource())
		}
		np := e.createNodePool(clusters[0].ID, "np-1")

		// A list: the envelope, and items of only the fields asked.
		var l rawList
		r := e.do("GET", base+"/clusters?fields=id,name,status.conditions&pageSize=2", nil).expect(200)
		r.into(&l)
		if got := keys(t, r.body); !slices.Equal(got, []string{"items", "kind", "next_page_token", "page", "size", "total"}) {
			t.Errorf("list envelope keys %v", got)
		}
		if l.Kind != "ClusterList" || l.Page != 1 || l.Size != 2 || l.Total != 3 || len(l.Items) != 2 {
			t.Errorf("envelope %+v", l)
		}
		for _, item := range l.Items {
			if got := keys(t, item); !slices.Equal(got, []string{"href", "id", "kind", "name", "status"}) {
				t.Errorf("item keys %v, want href id kind name status", got)
			}
			var it struct {
				Status json.RawMessage `json:"status"`
			}
			_ = json.Unmarshal(item, &it)
			if got := keys(t, it.Status); !slices.Equal(got, []string{"conditions"}) {
				t.Errorf("status keys %v", got)
			}
			var full struct {
				Status resource.Status `json:"status"`
			}
			_ = json.Unmarshal(item, &full)
			if _, ok := resource.FindCondition(full.Status.Conditions, "Ready"); !ok {
				t.Errorf("status.conditions lost the Ready condition: %s", item)
			}
		}
		// The projection is the full item cut down: same values, same bytes.
		full := e.do("GET", base+"/clusters/"+clusters[0].ID, nil).expect(200).body
		cut := e.do("GET", base+"/clusters/"+clusters[0].ID+"?fields=spec.nodes,spec.platform.type,labels.environment", nil).expect(200)
		if got := keys(t, cut.body); !slices.Equal(got, []string{"href", "id", "kind", "labels", "spec"}) {
			t.Errorf("item keys %v", got)
		}
		want := `"spec":{"nodes":9007199254740993,"platform":{"type":"gcp"}},"labels":{"environment":"production"}`
		if !bytes.Contains(cut.body, []byte(want)) {
			t.Errorf("projected cluster %s, want it to hold %s", cut.body, want)
		}
		head, _, found := bytes.Cut(cut.body, []byte(`,"spec"`))
		if !found {
			t.Fatalf("projected cluster %s has no spec", cut.body)
		}
		if !bytes.HasPrefix(full, head) {
			t.Errorf("kind, id and href differ from the full document:\n%s\n%s", cut.body, full)
		}

		// Child kinds, under their parent and across parents, and /resources.
		for _, tc := range []struct {
			path string
			list bool
			want []string
		}{
			{np.Href + "?fields=name,owner_references.id", false, []string{"href", "id", "kind", "name", "owner_references"}},
			{base + "/clusters/" + clusters[0].ID + "/nodepools?fields=labels.role", true, []string{"href", "id", "kind", "labels"}},
			{base + "/nodepools?fields=generation", true, []string{"generation", "href", "id", "kind"}},
			{base + "/resources?fields=name", true, []string{"href", "id", "kind", "name"}},
			{base + "/resources/" + np.ID + "?fields=created_by", false, []string{"created_by", "href", "id", "kind"}},
		} {
			r := e.do("GET", tc.path, nil).expect(200)
			items := []json.RawMessage{r.body}
			if tc.list {
				var l rawList
				r.into(&l)
				if items = l.Items; len(items) == 0 {
					t.Errorf("%s: no items", tc.path)
				}
			}
			for _, item := range items {
				if got := keys(t, item); !slices.Equal(got, tc.want) {
					t.Errorf("%s: keys %v, want %v", tc.path, got, tc.want)
				}
			}
		}
		var owner struct {
			OwnerReferences map[string]string `json:"owner_references"`
		}
		e.do("GET", np.Href+"?fields=owner_references.id", nil).expect(200).into(&owner)
		if len(owner.OwnerReferences) != 1 || owner.OwnerReferences["id"] != clusters[0].ID {
			t.Errorf("owner_references.id projected to %v", owner.OwnerReferences)
		}
	})
}

// The contract: a bad fields= value is "refused with 400
// HYPERFLEET-VAL-003 naming fields, the bad entry as its value"; "fields
// on any other request ... is a 400 naming fields, before anything is
// read or changed".
func TestFieldsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("fields-bad")
		for _, tc := range []struct{ query, value, message string }{
			{"fields=nmae", "nmae", `unknown field "nmae"`},
			{"fields=id,,name", "", "empty entry"},
			{"fields=", "", "empty entry"},
			{"fields=status.phase", "status.phase", `unknown field "phase" of status`},
			{"fields=name.first", "name.first", "no fields to select"},
			{"fields=" + strings.Repeat("id,", 40) + "id", "", "the limit is 32"},
			{"fields=spec." + strings.Repeat("a", 1100), "", "the limit is 1024"},
			{"fields=id&fields=name", "name", "more than once"},
		} {
			for _, path := range []string{base + "/clusters", c.Href} {
				p := e.do("GET", path+"?"+tc.query, nil).problem(400, "HYPERFLEET-VAL-003")
				if !p.names("fields") || !strings.Contains(p.Detail, tc.message) {
					t.Errorf("GET %s?%.40s: %+v, want fields named and %q", path, tc.query, p, tc.message)
				}
				if tc.value != "" && (len(p.Errors) == 0 || p.Errors[0].Value != tc.value) {
					t.Errorf("GET %s?%s: value %v, want %q", path, tc.query, p.Errors, tc.value)
				}
			}
		}
		// Where fields= does not apply: writes, statuses, reconciliation.
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{"POST", base + "/clusters?fields=id", clusterBody("fields-new")},
			{"PATCH", c.Href + "?fields=id", map[string]any{"labels": map[string]string{"x": "y"}}},
			{"DELETE", c.Href + "?fields=id", nil},
			{"GET", c.Href + "/statuses?fields=adapter", nil},
			{"PUT", c.Href + "/statuses?fields=adapter", report("validation", 1, "True")},
			{"GET", c.Href + "/reconciliation?fields=round", nil},
			{"POST", c.Href + "/force-delete?fields=id", map[string]any{"reason": "x"}},
		} {
			p := e.do(tc.method, tc.path, tc.body).problem(400, "HYPERFLEET-VAL-003")
			if !p.names("fields") || !strings.Contains(p.Detail, "only GETs of a resource or a list of resources take it") {
				t.Errorf("%s %s: %+v", tc.method, tc.path, p)
			}
		}
		var l list
		e.do("GET", base+"/clusters", nil).expect(200).into(&l)
		if l.Total != 1 {
			t.Errorf("total %d after refused writes, want 1", l.Total)
		}
		got := e.getCluster(c.ID)
		if got.Generation != 1 || got.Labels["x"] != "" || got.DeletedTime != nil {
			t.Errorf("a refused write changed the cluster: generation %d labels %v deleted %v", got.Generation, got.Labels, got.DeletedTime)
		}
		if got := e.do("GET", c.Href+"/statuses", nil).expect(200).body; bytes.Contains(got, []byte(`"validation"`)) {
			t.Errorf("a refused report was stored: %s", got)
		}
	})
}
