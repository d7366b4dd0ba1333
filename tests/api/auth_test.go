package api

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

type signer struct {
	key *rsa.PrivateKey
	kid string
}

func newSigner(t *testing.T, kid string) signer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signer{key: k, kid: kid}
}

func (s signer) jwks(t *testing.T) []byte {
	raw, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: "RS256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (s signer) token(t *testing.T, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = s.kid
	out, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func claims(mutate func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": "https://sso.example.com", "aud": "hyperfleet", "email": "alice@example.com",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestJWTAuth(t *testing.T) {
	good := newSigner(t, "key-1")
	other := newSigner(t, "key-2")
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(good.jwks(t)) }))
	defer jwks.Close()

	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, func(o *apiserver.Options) {
			o.Auth.Enabled = true
			o.Auth.JWKSURL = jwks.URL
			o.Auth.Issuer = "https://sso.example.com"
			o.Auth.Audience = "hyperfleet"
		})
		// Service endpoints stay open.
		e.do("GET", "/healthz", nil).expect(200)
		e.do("GET", "/readyz", nil).expect(200)
		e.do("GET", base+"/openapi", nil).expect(200)

		res := e.do("GET", base+"/clusters", nil)
		res.problem(401, "HYPERFLEET-AUT-001")
		if res.header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		for name, tok := range map[string]string{
			"garbage":      "not-a-jwt",
			"wrong key":    other.token(t, claims(nil)),
			"expired":      good.token(t, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
			"no expiry":    good.token(t, claims(func(c jwt.MapClaims) { delete(c, "exp") })),
			"wrong issuer": good.token(t, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" })),
			"wrong aud":    good.token(t, claims(func(c jwt.MapClaims) { c["aud"] = "someone-else" })),
		} {
			e.token = tok
			if res := e.do("GET", base+"/clusters", nil); res.status != 401 {
				t.Errorf("%s token: %d, want 401", name, res.status)
			}
		}
		req, _ := http.NewRequest("GET", e.url+base+"/clusters", nil)
		req.Header.Set("Authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
			t.Errorf("Basic auth: %v %v", resp.StatusCode, err)
		}

		// A valid token without the identity claim: authenticated, not allowed.
		e.token = good.token(t, claims(func(c jwt.MapClaims) { delete(c, "email") }))
		e.do("GET", base+"/clusters", nil).problem(403, "HYPERFLEET-AUZ-001")
		// An identity that cannot be stored as created_by is refused too.
		for _, id := range []string{strings.Repeat("a", 5000), "eve\x00@example.com", "eve@example.com\nforged log line", " padded@example.com"} {
			e.token = good.token(t, claims(func(c jwt.MapClaims) { c["email"] = id }))
			if p := e.do("POST", base+"/clusters", clusterBody("bad-identity")).problem(403, "HYPERFLEET-AUZ-001"); !strings.Contains(p.Detail, "printable") {
				t.Errorf("identity %.20q: %s", id, p.Detail)
			}
		}

		e.token = good.token(t, claims(nil))
		c := e.createCluster("authed")
		if c.CreatedBy != "alice@example.com" || c.UpdatedBy != "alice@example.com" {
			t.Errorf("created_by/updated_by = %q/%q", c.CreatedBy, c.UpdatedBy)
		}
		e.token = good.token(t, claims(func(c jwt.MapClaims) { c["email"] = "bob@example.com" }))
		r := e.do("PATCH", c.Href, `{"labels":{"owner":"bob"}}`).expect(200).resource()
		if r.CreatedBy != "alice@example.com" || r.UpdatedBy != "bob@example.com" {
			t.Errorf("after bob's patch: created_by %q updated_by %q", r.CreatedBy, r.UpdatedBy)
		}
		r = e.do("DELETE", c.Href, nil).expect(202).resource()
		if r.DeletedBy != "bob@example.com" {
			t.Errorf("deleted_by = %q", r.DeletedBy)
		}
	})
}

func TestJWTAuthFromFileAndCustomClaim(t *testing.T) {
	s := newSigner(t, "file-key")
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, s.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store.BackendSQLite, func(o *apiserver.Options) {
		o.Auth = apiserverAuth(file, "preferred_username")
	})
	e.token = s.token(t, claims(func(c jwt.MapClaims) { c["preferred_username"] = "carol" }))
	if c := e.createCluster("from-file"); c.CreatedBy != "carol" {
		t.Errorf("created_by = %q, want the preferred_username claim", c.CreatedBy)
	}
}

// With --jwt-protect-service, /metrics and the version metadata need a
// token; probes and the OpenAPI document do not.
func TestJWTProtectService(t *testing.T) {
	s := newSigner(t, "svc-key")
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, s.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	open := newEnv(t, store.BackendSQLite, func(o *apiserver.Options) { o.Auth = apiserverAuth(file, "") })
	open.do("GET", "/metrics", nil).expect(200)
	open.do("GET", "/api/hyperfleet", nil).expect(200)
	e := newEnv(t, store.BackendSQLite, func(o *apiserver.Options) {
		o.Auth = apiserverAuth(file, "")
		o.Auth.ProtectService = true
	})
	for _, path := range []string{"/metrics", "/api/hyperfleet"} {
		e.do("GET", path, nil).problem(401, "HYPERFLEET-AUT-001")
	}
	for _, path := range []string{"/healthz", "/readyz", base + "/openapi"} {
		e.do("GET", path, nil).expect(200)
	}
	e.token = s.token(t, claims(nil))
	e.do("GET", "/metrics", nil).expect(200)
	e.do("GET", "/api/hyperfleet", nil).expect(200)
}

func TestJWTConfigErrors(t *testing.T) {
	for name, mutate := range map[string]func(*apiserver.Options){
		"no keys":           func(o *apiserver.Options) { o.Auth.Enabled = true },
		"missing file":      func(o *apiserver.Options) { o.Auth = apiserverAuth("/nonexistent/jwks.json", "") },
		"both url+file":     func(o *apiserver.Options) { o.Auth = apiserverAuth("/x", ""); o.Auth.JWKSURL = "http://x" },
		"protect, auth off": func(o *apiserver.Options) { o.Auth.ProtectService = true },
	} {
		o := newEnvOptions(t)
		mutate(&o)
		if _, err := buildApp(o); err == nil {
			t.Errorf("%s: the API started", name)
		}
	}
}

func TestAuthOffIdentity(t *testing.T) {
	e := newEnv(t, store.BackendSQLite)
	e.token = "anything at all"
	c := e.createCluster("open")
	if c.CreatedBy != "system@hyperfleet.local" {
		t.Errorf("created_by with auth off = %q", c.CreatedBy)
	}
}

func apiserverAuth(file, claim string) auth.Config {
	return auth.Config{Enabled: true, JWKSFile: file, IdentityClaim: claim}
}
