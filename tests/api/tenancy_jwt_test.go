//go:build integration

package api

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/internal/await"
)

// jwtTenancy is the JWT-only example, with a second system
// identity: the reconciler's service account beside the adapters', both
// bound to the service accounts' issuer.
const jwtTenancy = `system_identities:
  - {issuer: "https://kubernetes.default.svc", identity: svc-adapter}
  - {issuer: "https://kubernetes.default.svc", identity: svc-reconciler}
dimensions:
  - {claim: org_id, key: org, required: true}
`

// rotatingJWKS serves the keys it holds now.
type rotatingJWKS struct {
	mu   sync.Mutex
	keys []jose.JSONWebKey
}

func (j *rotatingJWKS) set(keys ...signer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keys = nil
	for _, s := range keys {
		j.keys = append(j.keys, jose.JSONWebKey{Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: "RS256", Use: "sig"})
	}
}

func (j *rotatingJWKS) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: j.keys})
}

func userClaims(email, org string) jwt.MapClaims {
	return claims(func(c jwt.MapClaims) {
		c["email"] = email
		if org != "" {
			c["org_id"] = org
		}
	})
}

func serviceAccountClaims(sub string) jwt.MapClaims {
	return jwt.MapClaims{"iss": "https://kubernetes.default.svc", "aud": "hyperfleet", "sub": sub,
		"exp": time.Now().Add(time.Hour).Unix()}
}

// Tenancy without a gateway: tenants are told apart by a claim of their
// token (from the users' SSO issuer), system callers by their identity
// (service accounts of a second issuer, whose JWKS is served over TLS by
// a private CA). Audit fields take each issuer's identity claim, email or
// not.
func TestTenancyFromJWTs(t *testing.T) {
	sso, sa := newSigner(t, "sso-1"), newSigner(t, "sa-1")
	ssoKeys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sso.jwks(t)) }))
	defer ssoKeys.Close()
	saKeys := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sa.jwks(t)) }))
	defer saKeys.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: saKeys.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, func(o *apiserver.Options) {
			o.Auth = auth.Config{Enabled: true, Issuer: "https://sso.example.com", JWKSURL: ssoKeys.URL, Audience: "hyperfleet", IdentityClaim: "email",
				Issuers: []auth.Issuer{{Issuer: "https://kubernetes.default.svc", JWKSURL: saKeys.URL, Audience: "hyperfleet", IdentityClaim: "sub", CAFile: ca}}}
		}, withTenancy(t, jwtTenancy, true))
		alice := caller{name: "own tenant", token: sso.token(t, userClaims("alice@example.com", "acme"))}
		bot := caller{name: "own tenant's bot", token: sso.token(t, userClaims("ci-bot", "acme"))}
		bob := caller{name: "other tenant", token: sso.token(t, userClaims("bob@example.com", "globex"))}
		adapter := caller{name: "system caller", token: sa.token(t, serviceAccountClaims("svc-adapter"))}
		reconciler := caller{name: "second system caller", token: sa.token(t, serviceAccountClaims("svc-reconciler"))}
		stranger := caller{name: "service account not listed", token: sa.token(t, serviceAccountClaims("svc-other"))}
		noOrg := caller{name: "missing dimension", token: sso.token(t, userClaims("carol@example.com", ""))}

		c := e.as(alice, "POST", base+"/clusters", clusterBody("from-jwt")).expect(201).resource()
		if c.CreatedBy != "alice@example.com" || c.Tenancy["org"] != "acme" {
			t.Errorf("created_by %q, tenancy %v", c.CreatedBy, c.Tenancy)
		}
		// An identity that is no email address is recorded as it is.
		r := e.as(bot, "PATCH", c.Href, map[string]any{"labels": map[string]string{"by": "bot"}}).expect(200).resource()
		if r.UpdatedBy != "ci-bot" {
			t.Errorf("updated_by = %q, want the identity claim as sent", r.UpdatedBy)
		}
		e.as(bob, "GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.as(noOrg, "GET", base+"/clusters", nil).problem(403, "HYPERFLEET-AUZ-002")
		// Service accounts of the second issuer: the two listed are system
		// callers (reads of every tenant, status writes); another one is a
		// tenant without a tenancy.
		for _, sys := range []caller{adapter, reconciler} {
			e.as(sys, "GET", c.Href, nil).expect(200)
			e.as(sys, "PUT", c.Href+"/statuses", report("validation", 2, "True")).expect(201)
			e.as(sys, "POST", base+"/clusters", clusterBody("by-service")).problem(403, "HYPERFLEET-AUZ-001")
		}
		e.as(stranger, "GET", c.Href, nil).problem(403, "HYPERFLEET-AUZ-002")
		// Issue 43: a token of the users' issuer whose identity claim is a
		// service's name is that user, a tenant, not a system caller.
		impostor := caller{name: "user named like a service", token: sso.token(t, userClaims("svc-adapter", "globex"))}
		e.as(impostor, "GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.as(impostor, "PUT", c.Href+"/statuses", report("validation", 2, "True")).problem(403, "HYPERFLEET-AUZ-001")
		e.as(alice, "PUT", c.Href+"/statuses", report("validation", 2, "True")).problem(403, "HYPERFLEET-AUZ-001")
		// A token of an issuer not trusted is not a token.
		e.as(caller{name: "untrusted", token: sa.token(t, jwt.MapClaims{"iss": "https://evil.example.com", "sub": "svc-adapter",
			"exp": time.Now().Add(time.Hour).Unix()})}, "GET", base+"/clusters", nil).problem(401, "HYPERFLEET-AUT-001")
	})
}

// A key rotated at the JWKS URL is picked up without a restart: a token
// signed by the new key is accepted within a minute, with the default
// settings (the URL is fetched again for an unknown key id at most every
// 30 s). The old key keeps working while the URL still lists it.
func TestJWTKeyRotationWithoutRestart(t *testing.T) {
	old, next := newSigner(t, "2026-01"), newSigner(t, "2026-02")
	keys := &rotatingJWKS{}
	keys.set(old)
	srv := httptest.NewServer(keys)
	defer srv.Close()
	e := newEnv(t, "sqlite", func(o *apiserver.Options) {
		o.Auth = auth.Config{Enabled: true, JWKSURL: srv.URL, Issuer: "https://sso.example.com", Audience: "hyperfleet"}
	}, withTenancy(t, "system_identities: [svc-adapter]\ndimensions:\n  - {claim: org_id, key: org, required: true}\n", true))
	oldToken := caller{name: "old key", token: old.token(t, userClaims("alice@example.com", "acme"))}
	e.as(oldToken, "GET", base+"/clusters", nil).expect(200)
	keys.set(old, next)
	newToken := caller{name: "new key", token: next.token(t, userClaims("alice@example.com", "acme"))}
	await.Eventually(t, time.Minute, "a token signed by the rotated key accepted", func() (bool, string) {
		res := e.as(newToken, "GET", base+"/clusters", nil)
		if res.status == 200 {
			return true, ""
		}
		res.problem(401, "HYPERFLEET-AUT-001")
		return false, "still refused"
	})
	e.as(oldToken, "GET", base+"/clusters", nil).expect(200)
}
