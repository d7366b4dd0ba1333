package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

type signer struct {
	key *rsa.PrivateKey
	kid string
}

func newSigner(t *testing.T, kid string) signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signer{key: k, kid: kid}
}

func (s signer) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: "RS256", Use: "sig"}
}

func (s signer) token(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	out, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func claimsOf(iss, sub string, extra ...any) jwt.MapClaims {
	c := jwt.MapClaims{"iss": iss, "sub": sub, "aud": "hyperfleet", "exp": time.Now().Add(time.Hour).Unix()}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return c
}

// jwksServer serves whatever keys it holds now, and counts its fetches.
type jwksServer struct {
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches int
}

func (j *jwksServer) set(keys ...jose.JSONWebKey) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keys = keys
}

func (j *jwksServer) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fetches
}

func (j *jwksServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fetches++
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: j.keys})
}

func writeJWKS(t *testing.T, keys ...jose.JSONWebKey) string {
	t.Helper()
	raw, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// Several issuers: each token is verified with the keys, audience and
// identity claim of the issuer its iss names, and only those.
func TestSeveralIssuers(t *testing.T) {
	sso, sa := newSigner(t, "sso-1"), newSigner(t, "sa-1")
	ctx := context.Background()
	a, err := New(ctx, Config{Enabled: true,
		Issuer: "https://sso.example.com", JWKSFile: writeJWKS(t, sso.jwk()), Audience: "hyperfleet", IdentityClaim: "email",
		Issuers: []Issuer{{Issuer: "https://kubernetes.default.svc", JWKSFile: writeJWKS(t, sa.jwk()), Audience: "hyperfleet", IdentityClaim: "sub"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, identity, fails string
	}{
		{"user of the first issuer", sso.token(t, claimsOf("https://sso.example.com", "u1", "email", "alice@example.com")), "alice@example.com", ""},
		{"service account of the second, identified by sub", sa.token(t, claimsOf("https://kubernetes.default.svc", "svc-adapter")), "svc-adapter", ""},
		{"a second service account of the same issuer", sa.token(t, claimsOf("https://kubernetes.default.svc", "svc-reconciler")), "svc-reconciler", ""},
		{"an identity that is no email", sso.token(t, claimsOf("https://sso.example.com", "u2", "email", "build-bot")), "build-bot", ""},
		{"signed by the other issuer's key", sso.token(t, claimsOf("https://kubernetes.default.svc", "svc-adapter")), "", "no key with id"},
		{"an untrusted issuer", sa.token(t, claimsOf("https://evil.example.com", "svc-adapter")), "", "is not trusted"},
		{"the second issuer's audience is checked", sa.token(t, claimsOf("https://kubernetes.default.svc", "svc-adapter", "aud", "other")), "", "audience"},
		{"the first issuer's identity claim is missing", sso.token(t, claimsOf("https://sso.example.com", "u1")), "", `no "email" claim`},
	} {
		p, err := a.Verify(ctx, "Bearer "+tc.token)
		switch {
		case tc.fails == "" && (err != nil || p.Identity != tc.identity):
			t.Errorf("%s: %+v, %v; want identity %s", tc.name, p, err, tc.identity)
		case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
			t.Errorf("%s: %+v, %v; want an error saying %q", tc.name, p, err, tc.fails)
		case tc.fails == "" && p.Claims["sub"] == nil:
			t.Errorf("%s: the claims are not returned: %v", tc.name, p.Claims)
		}
	}
}

// Keys rotated at a JWKS URL are picked up without a restart: a token
// naming a new key fetches the set again (at most once per interval), a
// key replaced under the same id is fetched when a signature fails, and a
// key withdrawn stops verifying once the keys are older than MaxKeyAge.
func TestKeyRotationAtTheURL(t *testing.T) {
	old, next := newSigner(t, "k1"), newSigner(t, "k2")
	srv := &jwksServer{}
	srv.set(old.jwk())
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx := context.Background()
	a, err := New(ctx, Config{Enabled: true, JWKSURL: ts.URL, IdentityClaim: "sub", RefreshInterval: time.Nanosecond, MaxKeyAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(s signer) error {
		_, err := a.Verify(ctx, "Bearer "+s.token(t, claimsOf("https://sso.example.com", "alice")))
		return err
	}
	if err := verify(old); err != nil {
		t.Fatal(err)
	}
	// A new key id: fetched on first sight.
	srv.set(old.jwk(), next.jwk())
	if err := verify(next); err != nil {
		t.Errorf("a token of a key added at the URL: %v", err)
	}
	// The same id, new key material.
	replaced := newSigner(t, "k2")
	srv.set(old.jwk(), replaced.jwk())
	if err := verify(replaced); err != nil {
		t.Errorf("a token of a key replaced under its id: %v", err)
	}
	// A key withdrawn is trusted until the keys age out.
	srv.set(replaced.jwk())
	a.issuers[0].keys.maxAge = 0
	if err := verify(old); err == nil {
		t.Error("a token of a withdrawn key still verifies after the keys aged out")
	}
}

// Unknown key ids do not fetch the set more than once per interval.
func TestUnknownKeysFetchAtMostOncePerInterval(t *testing.T) {
	known := newSigner(t, "k1")
	srv := &jwksServer{}
	srv.set(known.jwk())
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx := context.Background()
	a, err := New(ctx, Config{Enabled: true, JWKSURL: ts.URL, IdentityClaim: "sub", RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		stranger := signer{key: known.key, kid: "made-up"}
		if _, err := a.Verify(ctx, "Bearer "+stranger.token(t, claimsOf("x", "alice"))); err == nil {
			t.Fatal("a token naming an unknown key verified")
		}
	}
	if n := srv.count(); n != 1 {
		t.Errorf("%d fetches of the JWKS, want 1 (at start)", n)
	}
}

// A token without a kid is tried against every key of the set.
func TestTokenWithoutKeyID(t *testing.T) {
	one, two := newSigner(t, "a"), newSigner(t, "b")
	a, err := New(context.Background(), Config{Enabled: true, JWKSFile: writeJWKS(t, one.jwk(), two.jwk()), IdentityClaim: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	anonymous := signer{key: two.key}
	if p, err := a.Verify(context.Background(), "Bearer "+anonymous.token(t, claimsOf("x", "alice"))); err != nil || p.Identity != "alice" {
		t.Errorf("a token without kid: %+v, %v", p, err)
	}
}

// A JWKS URL behind a private CA verifies with --jwt-ca-file, and
// without it the keys cannot be fetched.
func TestCustomCA(t *testing.T) {
	s := newSigner(t, "k1")
	srv := &jwksServer{}
	srv.set(s.jwk())
	ts := httptest.NewTLSServer(srv)
	defer ts.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok := "Bearer " + s.token(t, claimsOf("https://sso.example.com", "alice"))
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"the flag's CA", Config{Enabled: true, JWKSURL: ts.URL, IdentityClaim: "sub", CAFile: ca}, true},
		{"the issuer's own CA", Config{Enabled: true, IdentityClaim: "sub",
			Issuers: []Issuer{{JWKSURL: ts.URL, IdentityClaim: "sub", CAFile: ca}}}, true},
		{"no CA", Config{Enabled: true, JWKSURL: ts.URL, IdentityClaim: "sub"}, false},
	} {
		a, err := New(ctx, tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err = a.Verify(ctx, tok)
		if (err == nil) != tc.ok {
			t.Errorf("%s: verify = %v, want ok %t", tc.name, err, tc.ok)
		}
	}
	if _, err := New(ctx, Config{Enabled: true, JWKSURL: ts.URL, CAFile: filepath.Join(t.TempDir(), "none.pem")}); err == nil || !strings.Contains(err.Error(), "CA") {
		t.Errorf("a missing CA file: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"off", Config{}, ""},
		{"one flag issuer", Config{Enabled: true, JWKSURL: "https://x/jwks"}, ""},
		{"issuers only", Config{Enabled: true, Issuers: []Issuer{{JWKSFile: "/x"}}}, ""},
		{"no keys", Config{Enabled: true}, "neither HYPERFLEET_JWT_JWKS_URL nor HYPERFLEET_JWT_JWKS_FILE"},
		{"both flags", Config{Enabled: true, JWKSURL: "https://x", JWKSFile: "/x"}, "not both"},
		{"issuers with auth off", Config{Issuers: []Issuer{{JWKSFile: "/x"}}}, "HYPERFLEET_JWT_ENABLED is off"},
		{"protect with auth off", Config{ProtectService: true}, "PROTECT_SERVICE needs"},
		{"an issuer without keys", Config{Enabled: true, Issuers: []Issuer{{Issuer: "a"}}}, "issuers[0] has neither jwks_url nor jwks_file"},
		{"an issuer with both", Config{Enabled: true, Issuers: []Issuer{{JWKSURL: "https://x", JWKSFile: "/x"}}}, "both jwks_url and jwks_file"},
		{"not a URL", Config{Enabled: true, Issuers: []Issuer{{JWKSURL: "ftp://x"}}}, "not an http(s) URL"},
		{"several, one without iss", Config{Enabled: true, JWKSURL: "https://x", Issuer: "a", Issuers: []Issuer{{JWKSFile: "/x"}}}, "issuers[0] has no issuer"},
		{"several, the flags' without iss", Config{Enabled: true, JWKSURL: "https://x", Issuers: []Issuer{{Issuer: "b", JWKSFile: "/x"}}}, "HYPERFLEET_JWT_* settings has no issuer"},
		{"the same issuer twice", Config{Enabled: true, Issuers: []Issuer{{Issuer: "a", JWKSFile: "/x"}, {Issuer: "a", JWKSFile: "/y"}}}, "listed twice"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadIssuers(t *testing.T) {
	dir := t.TempDir()
	write := func(doc string) string {
		f := filepath.Join(dir, "issuers.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	got, err := LoadIssuers(write("issuers:\n  - {issuer: https://a, jwks_url: https://a/jwks, audience: hf, identity_claim: sub, ca_file: /ca.pem}\n"))
	if err != nil || len(got) != 1 || got[0] != (Issuer{Issuer: "https://a", JWKSURL: "https://a/jwks", Audience: "hf", IdentityClaim: "sub", CAFile: "/ca.pem"}) {
		t.Fatalf("LoadIssuers = %+v, %v", got, err)
	}
	for doc, want := range map[string]string{
		"":                           "is empty",
		"issuers: []\n":              "lists no issuer",
		"issuers: [{audiance: x}]\n": "field audiance not found",
	} {
		if _, err := LoadIssuers(write(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
	if _, err := LoadIssuers(filepath.Join(dir, "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// Issue 43: a token whose exp is in the year 3000, or whose iat is a day
// ahead, was accepted. Lifetime and clock skew are bounded.
func TestTokenLifetimeAndClockSkew(t *testing.T) {
	s := newSigner(t, "a")
	a, err := New(context.Background(), Config{Enabled: true, JWKSFile: writeJWKS(t, s.jwk()), IdentityClaim: "sub", MaxTokenLifetime: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := []struct {
		name    string
		claims  jwt.MapClaims
		wantErr string
	}{
		{"an hour", claimsOf("x", "alice"), ""},
		{"issued now for 12 hours", claimsOf("x", "alice", "iat", now.Unix(), "exp", now.Add(12*time.Hour).Unix()), ""},
		{"the year 3000", claimsOf("x", "alice", "exp", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()), "longer than"},
		{"issued long ago for longer than allowed", claimsOf("x", "alice", "iat", now.Add(-20*time.Hour).Unix(), "exp", now.Add(time.Hour).Unix()), "longer than"},
		{"issued a day ahead", claimsOf("x", "alice", "iat", now.Add(24*time.Hour).Unix(), "exp", now.Add(25*time.Hour).Unix()), "invalid token"},
		{"issued within the skew ahead", claimsOf("x", "alice", "iat", now.Add(10*time.Second).Unix()), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := a.Verify(context.Background(), "Bearer "+s.token(t, c.claims))
			if c.wantErr == "" {
				if err != nil || p.Identity != "alice" {
					t.Fatalf("Verify = %+v, %v; want alice", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Verify = %+v, %v; want an error saying %q", p, err, c.wantErr)
			}
		})
	}
}
