// Package auth verifies optional JWT bearer tokens against a JWKS (fetched
// from a URL or read from a file) and names the caller for created_by /
// updated_by. With auth off every caller is system@hyperfleet.local.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// SystemIdentity is the caller when authentication is off.
const SystemIdentity = "system@hyperfleet.local"

// Config of bearer-token authentication.
type Config struct {
	Enabled bool
	// Issuer, when set, must equal the token's iss claim.
	Issuer string
	// JWKSURL or JWKSFile provide the verification keys (one is required).
	JWKSURL  string
	JWKSFile string
	// Audience, when set, must be among the token's aud claim.
	Audience string
	// IdentityClaim names the caller (default "email").
	IdentityClaim string
	// ProtectService requires a token on /metrics and the version metadata
	// (/api/hyperfleet) too; health probes and the OpenAPI document stay open.
	ProtectService bool
	// HTTPClient fetches the JWKS URL; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// Validate reports configuration mistakes, naming the setting to fix.
func (c Config) Validate() error {
	if !c.Enabled {
		if c.ProtectService {
			return errors.New("auth: HYPERFLEET_JWT_PROTECT_SERVICE needs HYPERFLEET_JWT_ENABLED: without tokens there is nothing to check on /metrics")
		}
		return nil
	}
	if c.JWKSURL == "" && c.JWKSFile == "" {
		return errors.New("auth: HYPERFLEET_JWT_ENABLED is set but neither HYPERFLEET_JWT_JWKS_URL nor HYPERFLEET_JWT_JWKS_FILE is: the API needs the keys that sign tokens")
	}
	if c.JWKSURL != "" && c.JWKSFile != "" {
		return errors.New("auth: set HYPERFLEET_JWT_JWKS_URL or HYPERFLEET_JWT_JWKS_FILE, not both")
	}
	return nil
}

// Error is an authentication failure; Forbidden distinguishes a valid token
// that does not name a caller (403) from a missing or invalid one (401).
type Error struct {
	Forbidden bool
	Message   string
}

func (e *Error) Error() string { return e.Message }

// Authenticator checks bearer tokens.
type Authenticator struct {
	cfg    Config
	parser *jwt.Parser

	mu          sync.RWMutex
	keys        jose.JSONWebKeySet
	lastRefresh time.Time
}

// refreshEvery bounds how often an unknown key id triggers a JWKS fetch.
const refreshEvery = 30 * time.Second

// New loads the key set. A JWKS URL that cannot be fetched yet is not fatal:
// keys are fetched again when a token arrives.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.IdentityClaim == "" {
		cfg.IdentityClaim = "email"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(30 * time.Second),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	a := &Authenticator{cfg: cfg, parser: jwt.NewParser(opts...)}
	if !cfg.Enabled {
		return a, nil
	}
	if cfg.JWKSFile != "" {
		raw, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("auth: read HYPERFLEET_JWT_JWKS_FILE %s: %w", cfg.JWKSFile, err)
		}
		if err := a.setKeys(raw); err != nil {
			return nil, fmt.Errorf("auth: %s: %w", cfg.JWKSFile, err)
		}
		return a, nil
	}
	_ = a.refresh(ctx) // retried on first use
	return a, nil
}

// Enabled reports whether tokens are checked.
func (a *Authenticator) Enabled() bool { return a.cfg.Enabled }

func (a *Authenticator) setKeys(raw []byte) error {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return fmt.Errorf("not a JWKS document: %w", err)
	}
	if len(set.Keys) == 0 {
		return errors.New("the JWKS holds no keys")
	}
	a.mu.Lock()
	a.keys = set
	a.mu.Unlock()
	return nil
}

func (a *Authenticator) refresh(ctx context.Context) error {
	a.mu.Lock()
	if time.Since(a.lastRefresh) < refreshEvery && !a.lastRefresh.IsZero() {
		a.mu.Unlock()
		return nil
	}
	a.lastRefresh = time.Now()
	a.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.JWKSURL, nil)
	if err != nil {
		return err
	}
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetch JWKS %s: %w", a.cfg.JWKSURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch JWKS %s: HTTP %d", a.cfg.JWKSURL, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	return a.setKeys(raw)
}

func (a *Authenticator) key(ctx context.Context, kid string) (any, error) {
	find := func() (any, bool) {
		a.mu.RLock()
		defer a.mu.RUnlock()
		if kid == "" && len(a.keys.Keys) == 1 {
			return a.keys.Keys[0].Key, true
		}
		for _, k := range a.keys.Key(kid) {
			return k.Key, true
		}
		return nil, false
	}
	if k, ok := find(); ok {
		return k, nil
	}
	if a.cfg.JWKSURL != "" {
		if err := a.refresh(ctx); err != nil {
			return nil, err
		}
		if k, ok := find(); ok {
			return k, nil
		}
	}
	// The kid comes from the caller: quoted, and cut short in the answer
	// and the log.
	return nil, fmt.Errorf("no key with id %q in the JWKS", truncate(kid, 64))
}

// ProtectsService reports whether /metrics and the version metadata need a
// token.
func (a *Authenticator) ProtectsService() bool { return a.cfg.Enabled && a.cfg.ProtectService }

// Authenticate checks the Authorization header and returns the caller.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (string, error) {
	if !a.cfg.Enabled {
		return SystemIdentity, nil
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if header == "" {
		return "", &Error{Message: "missing bearer token: send Authorization: Bearer <JWT>"}
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", &Error{Message: "the Authorization header must be 'Bearer <JWT>'"}
	}
	claims := jwt.MapClaims{}
	_, err := a.parser.ParseWithClaims(strings.TrimSpace(token), claims, func(t *jwt.Token) (any, error) {
		// RFC 7515 4.1.11: a token whose crit header names extensions the
		// recipient does not understand must be rejected; this API
		// understands none.
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New("the token has a crit header, and no critical extension is supported")
		}
		kid, _ := t.Header["kid"].(string)
		return a.key(ctx, kid)
	})
	if err != nil {
		return "", &Error{Message: "invalid token: " + err.Error()}
	}
	identity, _ := claims[a.cfg.IdentityClaim].(string)
	if strings.TrimSpace(identity) == "" {
		return "", &Error{Forbidden: true, Message: fmt.Sprintf("the token is valid but has no %q claim to identify the caller", a.cfg.IdentityClaim)}
	}
	if !ValidIdentity(identity) {
		return "", &Error{Forbidden: true, Message: fmt.Sprintf("the token's %q claim must be 1 to %d printable characters (it is stored as created_by/updated_by)", a.cfg.IdentityClaim, MaxIdentityLength)}
	}
	if strings.EqualFold(identity, SystemIdentity) {
		return "", &Error{Forbidden: true, Message: fmt.Sprintf("the identity %s is reserved for writes made with authentication off; a token cannot claim it", SystemIdentity)}
	}
	return identity, nil
}

// MaxIdentityLength bounds the identity claim, which every write stores.
const MaxIdentityLength = 256

// ValidIdentity reports whether an identity may be stored: valid UTF-8,
// at most MaxIdentityLength bytes, no control characters, not blank.
func ValidIdentity(id string) bool {
	if len(id) > MaxIdentityLength || !utf8.ValidString(id) || strings.TrimSpace(id) != id || id == "" {
		return false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
