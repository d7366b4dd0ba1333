package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// gateway is the gateway example; jwtOnly its JWT-only one.
const (
	gateway = `system_header: X-HyperFleet-System
dimensions:
  - {header: X-Tenant-Org, key: org, required: true}
  - {header: X-Tenant-Project, key: project, required: false}
`
	jwtOnly = `system_identities: [svc-adapter]
dimensions:
  - {claim: org_id, key: org, required: true}
`
)

func mustParse(t *testing.T, doc string, jwt bool, issuers ...string) *Config {
	t.Helper()
	c, err := Parse("tenancy.yaml", []byte(doc), jwt, issuers...)
	if err != nil {
		t.Fatalf("parse:\n%s\n%v", doc, err)
	}
	return c
}

func headers(pairs ...string) func(string) []string {
	h := http.Header{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Add(pairs[i], pairs[i+1])
	}
	return h.Values
}

func TestResolve(t *testing.T) {
	gw := mustParse(t, gateway, false)
	jw := mustParse(t, jwtOnly, true)
	issuers := mustParse(t, `system_identities: [{issuer: https://sso.example/services, identity: svc-adapter}]
dimensions: [{claim: org_id, key: org, required: true}]
`, true, "https://sso.example/users", "https://sso.example/services")
	both := mustParse(t, `system_identities: [svc-reconciler, svc-adapter]
dimensions:
  - {header: X-Tenant-Org, key: org, required: true}
  - {claim: project_id, key: project}
`, true)
	for _, tc := range []struct {
		name   string
		cfg    *Config
		req    Request
		system bool
		want   map[string]string // the tenancy; nil with system or a refusal
		refuse string            // a substring of the refusal
	}{
		{name: "gateway tenant with both dimensions", cfg: gw,
			req:  Request{Header: headers("X-Tenant-Org", "acme", "X-Tenant-Project", "web")},
			want: map[string]string{"org": "acme", "project": "web"}},
		{name: "gateway tenant without the optional dimension", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "acme")}, want: map[string]string{"org": "acme"}},
		{name: "header names are case-insensitive", cfg: gw,
			req: Request{Header: headers("x-tenant-org", "acme")}, want: map[string]string{"org": "acme"}},
		{name: "surrounding spaces are trimmed", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "  acme ")}, want: map[string]string{"org": "acme"}},
		{name: "every allowed character", cfg: gw,
			req:  Request{Header: headers("X-Tenant-Org", "A.b_C-9")},
			want: map[string]string{"org": "A.b_C-9"}},
		{name: "63 characters", cfg: gw,
			req:  Request{Header: headers("X-Tenant-Org", strings.Repeat("a", 63))},
			want: map[string]string{"org": strings.Repeat("a", 63)}},
		{name: "system header true", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "true")}, system: true},
		{name: "system header in another case, with a tenant's headers too", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "TRUE", "X-Tenant-Org", "acme")}, system: true},
		{name: "system header false is a tenant", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "false", "X-Tenant-Org", "acme")}, want: map[string]string{"org": "acme"}},
		{name: "system header neither true nor false", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "yes")}, refuse: "must be true or false"},
		{name: "system header twice", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "true", "X-HyperFleet-System", "true")}, refuse: "sent 2 times"},
		{name: "missing required header", cfg: gw,
			req: Request{Header: headers("X-Tenant-Project", "web")}, refuse: "dimension org is required: the gateway must send header X-Tenant-Org"},
		{name: "no headers at all", cfg: gw, req: Request{}, refuse: "org is required"},
		{name: "empty required header counts as missing", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "  ")}, refuse: "org is required"},
		{name: "value with a slash", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "acme/evil")}, refuse: "must be 1 to 63 letters"},
		{name: "value with a comma would split the canonical form", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "acme,project=x")}, refuse: "must be 1 to 63"},
		{name: "value with an equals sign", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "a=b")}, refuse: "must be 1 to 63"},
		{name: "64 characters", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", strings.Repeat("a", 64))}, refuse: "must be 1 to 63"},
		{name: "non-ASCII value", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "acmé")}, refuse: "must be 1 to 63"},
		{name: "invalid optional value", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "acme", "X-Tenant-Project", "we b")}, refuse: "dimension project"},
		{name: "a dimension header sent twice", cfg: gw,
			req: Request{Header: headers("X-Tenant-Org", "acme", "X-Tenant-Org", "other")}, refuse: "sent 2 times"},
		{name: "claim tenant", cfg: jw,
			req: Request{Identity: "alice@example.com", Claims: map[string]any{"org_id": "acme"}}, want: map[string]string{"org": "acme"}},
		{name: "integer claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"org_id": float64(4711)}}, want: map[string]string{"org": "4711"}},
		{name: "json.Number claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"org_id": json.Number("12")}}, want: map[string]string{"org": "12"}},
		{name: "fractional claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"org_id": 1.5}}, refuse: "must be a string or an integer"},
		{name: "list claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"org_id": []any{"acme"}}}, refuse: "is a list"},
		{name: "boolean claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"org_id": true}}, refuse: "is a boolean"},
		{name: "missing claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"sub": "alice"}}, refuse: "the token has no org_id claim"},
		{name: "null claim", cfg: jw,
			req: Request{Identity: "alice", Claims: map[string]any{"org_id": nil}}, refuse: "org_id"},
		{name: "system identity", cfg: jw,
			req: Request{Identity: "svc-adapter", Claims: map[string]any{"sub": "svc-adapter"}}, system: true},
		{name: "an identity differing in case is not a system identity", cfg: jw,
			req: Request{Identity: "SVC-ADAPTER", Claims: map[string]any{"org_id": "acme"}}, want: map[string]string{"org": "acme"}},
		{name: "a system header means nothing without system_header", cfg: jw,
			req:  Request{Identity: "alice", Header: headers("X-HyperFleet-System", "true"), Claims: map[string]any{"org_id": "acme"}},
			want: map[string]string{"org": "acme"}},
		{name: "header and claim dimensions together", cfg: both,
			req:  Request{Identity: "alice", Header: headers("X-Tenant-Org", "acme"), Claims: map[string]any{"project_id": "web"}},
			want: map[string]string{"org": "acme", "project": "web"}},
		{name: "a system identity with header dimensions", cfg: both,
			req: Request{Identity: "svc-reconciler"}, system: true},
		// Issue 43: with JWT on, a tenant's token plus the header was a
		// system caller. No header is read for that with tokens.
		{name: "with tokens a system header makes no system caller", cfg: both,
			req:  Request{Identity: "alice", Header: headers("X-HyperFleet-System", "true", "X-Tenant-Org", "acme")},
			want: map[string]string{"org": "acme"}},
		// Issue 43: a user issuer's token claiming a service's identity was
		// a system caller.
		{name: "a system identity of another issuer is a tenant", cfg: issuers,
			req: Request{Identity: "svc-adapter", Issuer: "https://sso.example/users", Claims: map[string]any{"org_id": "acme"}}, want: map[string]string{"org": "acme"}},
		{name: "a system identity of its issuer", cfg: issuers,
			req: Request{Identity: "svc-adapter", Issuer: "https://sso.example/services"}, system: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, refusal := tc.cfg.Resolve(tc.req)
			if tc.refuse != "" {
				if refusal == nil || !strings.Contains(refusal.Message, tc.refuse) {
					t.Fatalf("Resolve = %+v, %v; want a refusal saying %q", got, refusal, tc.refuse)
				}
				if refusal.Source == "" {
					t.Errorf("refusal %q names no source", refusal.Message)
				}
				return
			}
			if refusal != nil {
				t.Fatalf("refused: %v", refusal)
			}
			if got.System != tc.system || !maps.Equal(got.Tenancy, tc.want) {
				t.Fatalf("Resolve = %+v, want system %t tenancy %v", got, tc.system, tc.want)
			}
			if got.Key != resource.TenancyKey(tc.want) {
				t.Errorf("key %q, want %q", got.Key, resource.TenancyKey(tc.want))
			}
			if got.System && (got.Key != "" || got.Tenancy != nil) {
				t.Errorf("a system caller has a tenancy: %+v", got)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     string
		jwt     bool
		issuers []string
		// want lists, per problem, a substring of its field and of its
		// text; nil: the file is valid.
		want [][2]string
	}{
		{name: "gateway example", doc: gateway},
		{name: "JWT example", doc: jwtOnly, jwt: true},
		{name: "JWT example with auth off", doc: jwtOnly, want: [][2]string{
			{"dimensions[0].claim", "--jwt-enabled"}, {"system_identities", "--jwt-enabled"}}},
		{name: "no dimensions", doc: "system_header: X-S\n", want: [][2]string{{"dimensions", "no dimension is listed"}}},
		{name: "none required", doc: "system_header: X-S\ndimensions: [{key: org, header: X-Org}]\n",
			want: [][2]string{{"dimensions", "required: true"}}},
		{name: "no source", doc: "system_header: X-S\ndimensions: [{key: org, required: true}]\n",
			want: [][2]string{{"dimensions[0]", "neither header nor claim"}}},
		{name: "two sources", doc: "system_identities: [svc]\ndimensions: [{key: org, header: X-Org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"dimensions[0]", "both header and claim"}}},
		{name: "missing key", doc: "system_header: X-S\ndimensions: [{header: X-Org, required: true}]\n",
			want: [][2]string{{"dimensions[0].key", "key is missing"}}},
		{name: "bad key", doc: "system_header: X-S\ndimensions: [{key: Org=1, header: X-Org, required: true}]\n",
			want: [][2]string{{"dimensions[0].key", "not a valid key"}}},
		{name: "duplicate key", doc: "system_header: X-S\ndimensions: [{key: org, header: X-Org, required: true}, {key: org, header: X-Org2}]\n",
			want: [][2]string{{"dimensions[1].key", "listed twice"}}},
		{name: "bad header name", doc: "system_header: X-S\ndimensions: [{key: org, header: 'X Org', required: true}]\n",
			want: [][2]string{{"dimensions[0].header", "not a valid header name"}}},
		{name: "duplicate header in another case", doc: "system_header: X-S\ndimensions: [{key: org, header: X-Org, required: true}, {key: project, header: x-org}]\n",
			want: [][2]string{{"dimensions[1].header", "already used by dimensions[0].header"}}},
		{name: "dimension header is the system header", doc: "system_header: X-Org\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"dimensions[0].header", "already used by system_header"}}},
		{name: "identity header as a dimension", doc: "system_header: X-S\ndimensions: [{key: org, header: authorization, required: true}]\n",
			want: [][2]string{{"dimensions[0].header", "Authorization carries the caller's identity"}}},
		{name: "identity header as the system header", doc: "system_header: X-Forwarded-User\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_header", "carries the caller's identity"}}},
		{name: "no system caller", doc: "dimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_header", "no caller can be a system caller"}}},
		{name: "reserved identity", doc: "system_identities: [System@HyperFleet.local]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"system_identities[0]", "authentication off"}}},
		{name: "duplicate identity", doc: "system_identities: [a, a]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"system_identities[1]", "listed twice"}}},
		{name: "blank identity", doc: "system_identities: [' a']\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"system_identities[0]", "not an identity"}}},
		{name: "bad claim name", doc: "system_identities: [svc]\ndimensions: [{key: org, claim: 'org id', required: true}]\n", jwt: true,
			want: [][2]string{{"dimensions[0].claim", "not a valid claim name"}}},
		{name: "a system header with tokens", doc: "system_header: X-S\nsystem_identities: [svc]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"system_header", "any holder of a token"}}},
		{name: "an identity without its issuer among several", doc: "system_identities: [svc-adapter]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			issuers: []string{"https://a", "https://b"}, want: [][2]string{{"system_identities[0]", "names no issuer"}}},
		{name: "an identity of an untrusted issuer", doc: "system_identities: [{issuer: https://c, identity: svc}]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			issuers: []string{"https://a", "https://b"}, want: [][2]string{{"system_identities[0].issuer", "not a trusted issuer"}}},
		{name: "an identity with its issuer", doc: "system_identities: [{issuer: https://b, identity: svc}]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			issuers: []string{"https://a", "https://b"}},
		{name: "an identity without an issuer, one issuer trusted", doc: "system_identities: [svc]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			issuers: []string{""}},
		{name: "every problem at once", doc: "dimensions: [{key: org}, {key: org, header: Cookie}]\n", want: [][2]string{
			{"dimensions[0]", "neither header nor claim"}, {"dimensions[1].key", "listed twice"}, {"dimensions[1].header", "Cookie"},
			{"dimensions", "required: true"}, {"system_header", "no caller"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("tenancy.yaml", []byte(tc.doc), tc.jwt, tc.issuers...)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused a valid file: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "tenancy file tenancy.yaml: ") {
				t.Errorf("the error does not name the file: %s", msg)
			}
			lines := strings.Split(strings.TrimPrefix(msg, "tenancy file tenancy.yaml: "), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(lines), len(tc.want), msg)
			}
			for i, w := range tc.want {
				field, rest, _ := strings.Cut(lines[i], ": ")
				if field != w[0] || !strings.Contains(rest, w[1]) {
					t.Errorf("problem %d = %q, want field %s saying %q", i, lines[i], w[0], w[1])
				}
				if !strings.Contains(rest, "; ") {
					t.Errorf("problem %d says no fix: %q", i, lines[i])
				}
			}
		})
	}
}

func TestParseRefusesUnknownFieldsAndEmptyFiles(t *testing.T) {
	for doc, want := range map[string]string{
		"":                "is empty",
		"dimension: []\n": "field dimension not found",
		"dimensions: [{key: org, header: X-Org, requried: true}]\n": "field requried not found",
		"dimensions: {key: org}\n":                                  "cannot unmarshal",
	} {
		if _, err := Parse("t.yaml", []byte(doc), false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", doc, err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tenancy.yaml")
	if err := os.WriteFile(file, []byte(gateway), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file, false)
	if err != nil || len(c.Dimensions) != 2 || c.SystemHeader != "X-HyperFleet-System" {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), false); err == nil || !strings.Contains(err.Error(), "tenancy file") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestCallerContext(t *testing.T) {
	if c := FromContext(context.Background()); c.System || c.Key != "" || !c.Sees("org=acme") || !c.Sees("") {
		t.Errorf("without a caller: %+v, want unscoped", c)
	}
	tenant := Caller{Tenancy: map[string]string{"org": "acme"}, Key: "org=acme"}
	c := FromContext(WithCaller(context.Background(), tenant))
	if c.Key != "org=acme" || !c.Sees("org=acme") || c.Sees("org=other") || c.Sees("") || c.Sees("org=acme,project=web") {
		t.Errorf("a tenant sees the wrong tenancies: %+v", c)
	}
}

func TestSystemIdentityFields(t *testing.T) {
	_, err := Parse("tenancy.yaml", []byte("system_identities: [{issuer: https://b, name: svc}]\ndimensions: [{key: org, claim: org, required: true}]\n"), true, "https://b")
	if err == nil || !strings.Contains(err.Error(), "field name not found in a system identity (the fields are issuer and identity)") {
		t.Fatalf("Parse = %v, want the unknown field named with the fields a system identity has", err)
	}
	c := mustParse(t, "system_identities: [svc-a, {issuer: https://b, identity: svc-b}]\ndimensions: [{key: org, claim: org, required: true}]\n", true, "https://b")
	if got := fmt.Sprint(c.SystemIdentities); got != "[svc-a svc-b of https://b]" {
		t.Errorf("system identities = %s", got)
	}
}
