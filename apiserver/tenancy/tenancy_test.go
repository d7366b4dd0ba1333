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

// gateway is the gateway example, with the system secret of
// issue 43; jwtOnly its JWT-only one.
const (
	gateway = `system_header: X-HyperFleet-System
system_secret_file: $SECRET
dimensions:
  - {header: X-Tenant-Org, key: org, required: true}
  - {header: X-Tenant-Project, key: project, required: false}
`
	jwtOnly = `system_identities: [svc-adapter]
dimensions:
  - {claim: org_id, key: org, required: true}
`
)

// testSecret is the system secret of the examples; TestMain writes it to
// secretFile, and files a secret may not be in next to it.
const testSecret = "gateway-secret-0123456789abcdef-0123456789"

var secretFiles = map[string]string{}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tenancy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, content := range map[string]string{
		"$SECRET":    testSecret + "\n",
		"$SHORT":     "0123456789abcdef0123456789abcde\n", // 31 characters
		"$INVISIBLE": "0123456789abcdef 0123456789abcdef\n",
		"$EMPTY":     "",
	} {
		file := filepath.Join(dir, strings.ToLower(name[1:]))
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		secretFiles[name] = file
	}
	secretFiles["$MISSING"] = filepath.Join(dir, "missing")
	secretFiles["$DIR"] = dir // a directory: unreadable as a file
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// withSecrets points $SECRET, $SHORT... in a document at TestMain's files.
func withSecrets(doc string) string {
	for name, file := range secretFiles {
		doc = strings.ReplaceAll(doc, name+"\n", file+"\n")
	}
	return doc
}

func mustParse(t *testing.T, doc string, jwt bool, issuers ...string) *Config {
	t.Helper()
	c, err := Parse("tenancy.yaml", []byte(withSecrets(doc)), jwt, issuers...)
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
		// credential: the refusal is of the system header's value (401).
		credential bool
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
		// Issue 43: in gateway style the system header carries the secret;
		// a bare true made anyone who reached the API a system caller.
		{name: "system header with the secret", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", testSecret)}, system: true},
		{name: "the secret with a tenant's headers too", cfg: gw,
			req: Request{Header: headers("x-hyperfleet-system", " "+testSecret+" ", "X-Tenant-Org", "acme")}, system: true},
		{name: "system header true is refused", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "true")}, refuse: "is true, which makes no system caller", credential: true},
		{name: "system header TRUE is refused", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "TRUE", "X-Tenant-Org", "acme")}, refuse: "makes no system caller", credential: true},
		{name: "system header false is a tenant", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "false", "X-Tenant-Org", "acme")}, want: map[string]string{"org": "acme"}},
		{name: "system header False is a tenant", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "False", "X-Tenant-Org", "acme")}, want: map[string]string{"org": "acme"}},
		{name: "system header false without a tenancy", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "false")}, refuse: "org is required"},
		{name: "an empty system header is a tenant", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", " ", "X-Tenant-Org", "acme")}, want: map[string]string{"org": "acme"}},
		{name: "a wrong secret of the same length", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", strings.Repeat("x", len(testSecret)))}, refuse: "is not the system secret", credential: true},
		{name: "the secret in another case", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", strings.ToUpper(testSecret))}, refuse: "is not the system secret", credential: true},
		{name: "a prefix of the secret", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", testSecret[:len(testSecret)-1])}, refuse: "is not the system secret", credential: true},
		{name: "the secret and more", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", testSecret+"0")}, refuse: "is not the system secret", credential: true},
		{name: "system header neither secret nor false", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "yes", "X-Tenant-Org", "acme")}, refuse: "is not the system secret", credential: true},
		{name: "the secret twice", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", testSecret, "X-HyperFleet-System", testSecret)}, refuse: "sent 2 times", credential: true},
		{name: "the secret and false", cfg: gw,
			req: Request{Header: headers("X-HyperFleet-System", "false", "X-HyperFleet-System", testSecret)}, refuse: "sent 2 times", credential: true},
		{name: "a config whose secret was never read matches nothing", cfg: &Config{SystemHeader: "X-HyperFleet-System", Dimensions: gw.Dimensions},
			req: Request{Header: headers("X-HyperFleet-System", testSecret)}, refuse: "is not the system secret", credential: true},
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
				if refusal.Credential != tc.credential {
					t.Errorf("refusal %q: credential %t, want %t", refusal.Message, refusal.Credential, tc.credential)
				}
				if tc.credential {
					if refusal.Source != "header X-HyperFleet-System" {
						t.Errorf("refusal names %q, want the system header", refusal.Source)
					}
					// Never the value: a wrong secret may be a near miss
					// (true and false are the words of the hint).
					for _, v := range tc.req.Header("X-HyperFleet-System") {
						if v = strings.TrimSpace(v); len(v) > 5 && strings.Contains(refusal.Message, v) {
							t.Errorf("refusal %q echoes the value sent", refusal.Message)
						}
					}
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
		{name: "no dimensions", doc: "system_header: X-S\nsystem_secret_file: $SECRET\n", want: [][2]string{{"dimensions", "no dimension is listed"}}},
		{name: "none required", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: X-Org}]\n",
			want: [][2]string{{"dimensions", "required: true"}}},
		{name: "no source", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: org, required: true}]\n",
			want: [][2]string{{"dimensions[0]", "neither header nor claim"}}},
		{name: "two sources", doc: "system_identities: [svc]\ndimensions: [{key: org, header: X-Org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"dimensions[0]", "both header and claim"}}},
		{name: "missing key", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{header: X-Org, required: true}]\n",
			want: [][2]string{{"dimensions[0].key", "key is missing"}}},
		{name: "bad key", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: Org=1, header: X-Org, required: true}]\n",
			want: [][2]string{{"dimensions[0].key", "not a valid key"}}},
		{name: "duplicate key", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: X-Org, required: true}, {key: org, header: X-Org2}]\n",
			want: [][2]string{{"dimensions[1].key", "listed twice"}}},
		{name: "bad header name", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: 'X Org', required: true}]\n",
			want: [][2]string{{"dimensions[0].header", "not a valid header name"}}},
		{name: "duplicate header in another case", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: X-Org, required: true}, {key: project, header: x-org}]\n",
			want: [][2]string{{"dimensions[1].header", "already used by dimensions[0].header"}}},
		{name: "dimension header is the system header", doc: "system_header: X-Org\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"dimensions[0].header", "already used by system_header"}}},
		{name: "identity header as a dimension", doc: "system_header: X-S\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: authorization, required: true}]\n",
			want: [][2]string{{"dimensions[0].header", "Authorization carries the caller's identity"}}},
		{name: "identity header as the system header", doc: "system_header: X-Forwarded-User\nsystem_secret_file: $SECRET\ndimensions: [{key: org, header: X-Org, required: true}]\n",
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
		// Issue 43: a system header without a secret made anyone who
		// reached the API directly a system caller.
		{name: "a system header without a secret", doc: "system_header: X-S\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_secret_file", "is not set, so anyone who reaches the API directly could send X-S"}}},
		{name: "a missing secret file", doc: "system_header: X-S\nsystem_secret_file: $MISSING\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_secret_file", "no such file or directory"}}},
		{name: "an unreadable secret file", doc: "system_header: X-S\nsystem_secret_file: $DIR\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_secret_file", "is a directory"}}},
		{name: "an empty secret file", doc: "system_header: X-S\nsystem_secret_file: $EMPTY\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_secret_file", "is empty"}}},
		{name: "a short secret", doc: "system_header: X-S\nsystem_secret_file: $SHORT\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_secret_file", "holds 31 characters, fewer than the 32"}}},
		{name: "a secret with a space", doc: "system_header: X-S\nsystem_secret_file: $INVISIBLE\ndimensions: [{key: org, header: X-Org, required: true}]\n",
			want: [][2]string{{"system_secret_file", "invisible or non-ASCII byte 0x20"}}},
		{name: "a secret without a system header", doc: "system_secret_file: $SECRET\nsystem_identities: [svc]\ndimensions: [{key: org, claim: org, required: true}]\n", jwt: true,
			want: [][2]string{{"system_secret_file", "system_header is not"}}},
		{name: "every problem at once", doc: "dimensions: [{key: org}, {key: org, header: Cookie}]\n", want: [][2]string{
			{"dimensions[0]", "neither header nor claim"}, {"dimensions[1].key", "listed twice"}, {"dimensions[1].header", "Cookie"},
			{"dimensions", "required: true"}, {"system_header", "no caller"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("tenancy.yaml", []byte(withSecrets(tc.doc)), tc.jwt, tc.issuers...)
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
	if err := os.WriteFile(file, []byte(withSecrets(gateway)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file, false)
	if err != nil || len(c.Dimensions) != 2 || c.SystemHeader != "X-HyperFleet-System" {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	if h, v, ok := c.SystemCredential(); h != "X-HyperFleet-System" || v != testSecret || !ok {
		t.Errorf("SystemCredential = %q, %q, %t; want the header and the secret", h, v, ok)
	}
	for _, out := range []string{fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", *c), fmt.Sprint(*c)} {
		if strings.Contains(out, testSecret) {
			t.Errorf("printing the config shows the secret: %s", out)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), false); err == nil || !strings.Contains(err.Error(), "tenancy file") {
		t.Errorf("a missing file: %v", err)
	}
	// A missing secret names the tenancy file, the field, the secret's
	// file and how to make one.
	noSecret := filepath.Join(dir, "no-secret.yaml")
	if err := os.WriteFile(noSecret, []byte(strings.Replace(gateway, "$SECRET", secretFiles["$MISSING"], 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(noSecret, false)
	for _, want := range []string{"tenancy file " + noSecret + ": system_secret_file: ", secretFiles["$MISSING"], "openssl rand", "--api-system-secret-file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a missing secret: %v, want it to say %q", err, want)
		}
	}
	if _, err := Load(noSecret, true); err == nil || strings.Contains(err.Error(), "system_secret_file") {
		t.Errorf("with JWTs the system header is refused whatever its secret: %v", err)
	}
	// Built in code without a file, the credential is unknown until
	// Validate reads it.
	byHand := &Config{SystemHeader: "X-S", SystemSecretFile: secretFiles["$SECRET"], Dimensions: c.Dimensions}
	if _, _, ok := byHand.SystemCredential(); ok {
		t.Error("a credential before Validate")
	}
	if err := byHand.Validate(false); err != nil {
		t.Fatal(err)
	}
	if _, v, ok := byHand.SystemCredential(); v != testSecret || !ok {
		t.Errorf("after Validate: %q, %t", v, ok)
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
