package tenancy

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// FuzzResolve feeds arbitrary header values, identities and token claims
// (decoded as the JWT library decodes them, and with json.Number) to both
// of the tenancy files. Resolve must never panic; a caller it
// accepts has only valid values whose canonical form parses back to the
// same tenancy, and a refusal names its source. In gateway style only
// the system secret makes a system caller (issue 43).
func FuzzResolve(f *testing.F) {
	f.Add("acme", "web", "", "alice", []byte(`{"org_id":"acme"}`))
	f.Add("", "", "true", "svc-adapter", []byte(`{}`))
	f.Add("acme,project=x", "a=b", "TRUE ", "", []byte(`{"org_id":4711}`))
	f.Add(" acme ", "\x00", "yes", "SVC-ADAPTER", []byte(`{"org_id":[1,2]}`))
	f.Add("é", "web", "false", "x", []byte(`{"org_id":1e300}`))
	f.Add("a.b_c-9", "", "", "", []byte(`{"org_id":null,"sub":"x"}`))
	f.Add("acme", "web", "", "alice", []byte(`{"org_id":-9007199254740993}`))
	f.Add("acme", "", testSecret, "", []byte(`{}`))
	f.Add("", "", "\t"+testSecret[:len(testSecret)-1]+"\t", "", []byte(`{}`))
	gw, err := Parse("gateway.yaml", []byte(withSecrets(gateway)), false)
	if err != nil {
		f.Fatal(err)
	}
	jw, err := Parse("jwt.yaml", []byte(jwtOnly), true)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, org, project, system, identity string, claimsJSON []byte) {
		h := http.Header{}
		for name, v := range map[string]string{"X-Tenant-Org": org, "X-Tenant-Project": project, "X-HyperFleet-System": system} {
			if v != "" {
				h.Add(name, v)
			}
		}
		var plain map[string]any
		_ = json.Unmarshal(claimsJSON, &plain)
		var numbers map[string]any
		dec := json.NewDecoder(bytes.NewReader(claimsJSON))
		dec.UseNumber()
		_ = dec.Decode(&numbers)
		for _, cfg := range []*Config{gw, jw} {
			for _, claims := range []map[string]any{plain, numbers} {
				c, refusal := cfg.Resolve(Request{Header: h.Values, Identity: identity, Claims: claims})
				if refusal != nil {
					if refusal.Message == "" || refusal.Source == "" {
						t.Fatalf("a refusal without message or source: %+v", refusal)
					}
					continue
				}
				if cfg == gw && c.System != (strings.TrimSpace(system) == testSecret) {
					t.Fatalf("system header %q made system caller %t", system, c.System)
				}
				if c.System {
					if c.Key != "" || c.Tenancy != nil {
						t.Fatalf("a system caller with a tenancy: %+v", c)
					}
					continue
				}
				if len(c.Tenancy) == 0 {
					t.Fatalf("a tenant without a tenancy: %+v", c)
				}
				for k, v := range c.Tenancy {
					if !ValidValue(v) {
						t.Fatalf("dimension %s accepted with the invalid value %q", k, v)
					}
				}
				if c.Key != resource.TenancyKey(c.Tenancy) || !maps.Equal(resource.ParseTenancyKey(c.Key), c.Tenancy) {
					t.Fatalf("canonical form %q does not round-trip %v", c.Key, c.Tenancy)
				}
			}
		}
	})
}
