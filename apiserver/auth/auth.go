// Package auth verifies optional JWT bearer tokens from one or more
// trusted issuers, each with its key set (fetched from a URL, possibly
// behind a private CA, or read from a file), audience and identity claim,
// and names the caller for created_by / updated_by. With auth off every
// caller is system@hyperfleet.local.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
)

// SystemIdentity is the caller when authentication is off.
const SystemIdentity = "system@hyperfleet.local"

// Config of bearer-token authentication. The flat fields are the issuer
// the --jwt-* flags describe; Issuers adds more (--jwt-issuers-file).
type Config struct {
	Enabled bool
	// Issuer, when set, must equal the token's iss claim.
	Issuer string
	// JWKSURL or JWKSFile provide the verification keys (one is required
	// unless Issuers lists every issuer).
	JWKSURL  string
	JWKSFile string
	// Audience, when set, must be among the token's aud claim.
	Audience string
	// IdentityClaim names the caller (default "email").
	IdentityClaim string
	// Issuers are further trusted issuers, each with its own keys,
	// audience and identity claim.
	Issuers []Issuer
	// CAFile verifies JWKS URLs served with a certificate of a private CA
	// (an issuer's own ca_file wins); empty: the system roots.
	CAFile string
	// ProtectService requires a token on /metrics and the version metadata
	// (/api/hyperfleet) too; health probes and the OpenAPI document stay open.
	ProtectService bool
	// HTTPClient fetches the JWKS URLs; one per issuer, with its CA, when nil.
	HTTPClient *http.Client
	// RefreshInterval is the least time between two fetches of a JWKS URL
	// prompted by a token with a key it does not hold (default 30 s): a
	// key rotated at the URL is picked up within it, while a flood of
	// tokens naming made-up keys costs one fetch per interval.
	RefreshInterval time.Duration
	// MaxKeyAge is how long fetched keys are trusted before the next token
	// fetches them again (default 5 min), so a key withdrawn from the URL
	// stops verifying tokens.
	MaxKeyAge time.Duration
	// ClockSkew is how far the issuer's clock may be from this one (exp,
	// nbf and iat; default 30 s).
	ClockSkew time.Duration
	// MaxTokenLifetime bounds a token's exp: at most this long after its
	// iat (or after now, without iat), plus ClockSkew (default 24 h;
	// negative: no bound). A token stolen or minted for the year 3000 is
	// refused.
	MaxTokenLifetime time.Duration
}

// DefaultMaxTokenLifetime bounds the tokens of a Config that sets none.
const DefaultMaxTokenLifetime = 24 * time.Hour

// Issuer is one trusted token issuer, in --jwt-issuers-file's field names.
type Issuer struct {
	// Issuer must equal the token's iss claim. Required when more than one
	// issuer is trusted: tokens are told apart by it.
	Issuer string `yaml:"issuer"`
	// JWKSURL or JWKSFile (exactly one) provide its keys.
	JWKSURL  string `yaml:"jwks_url"`
	JWKSFile string `yaml:"jwks_file"`
	// Audience, when set, must be among the token's aud claim.
	Audience string `yaml:"audience"`
	// IdentityClaim names the caller (default "email"); any claim, with no
	// restriction to email addresses (sub, preferred_username...).
	IdentityClaim string `yaml:"identity_claim"`
	// CAFile verifies its JWKS URL (default: the Config's CAFile).
	CAFile string `yaml:"ca_file"`
}

// issuers is every issuer the configuration trusts: the flags' first.
func (c Config) issuers() []Issuer {
	var out []Issuer
	if c.JWKSURL != "" || c.JWKSFile != "" {
		out = append(out, Issuer{Issuer: c.Issuer, JWKSURL: c.JWKSURL, JWKSFile: c.JWKSFile, Audience: c.Audience, IdentityClaim: c.IdentityClaim})
	}
	return append(out, c.Issuers...)
}

// Validate reports configuration mistakes, naming the setting to fix.
func (c Config) Validate() error {
	if !c.Enabled {
		switch {
		case c.ProtectService:
			return errors.New("auth: HYPERFLEET_JWT_PROTECT_SERVICE needs HYPERFLEET_JWT_ENABLED: without tokens there is nothing to check on /metrics")
		case len(c.Issuers) > 0:
			return errors.New("auth: HYPERFLEET_JWT_ISSUERS_FILE lists issuers but HYPERFLEET_JWT_ENABLED is off: turn it on, or drop the file")
		}
		return nil
	}
	if c.JWKSURL != "" && c.JWKSFile != "" {
		return errors.New("auth: set HYPERFLEET_JWT_JWKS_URL or HYPERFLEET_JWT_JWKS_FILE, not both")
	}
	all := c.issuers()
	if len(all) == 0 {
		return errors.New("auth: HYPERFLEET_JWT_ENABLED is set but neither HYPERFLEET_JWT_JWKS_URL nor HYPERFLEET_JWT_JWKS_FILE is (nor HYPERFLEET_JWT_ISSUERS_FILE): the API needs the keys that sign tokens")
	}
	seen := map[string]bool{}
	for i, is := range all {
		name := issuerField(c, i)
		switch {
		case is.JWKSURL != "" && is.JWKSFile != "":
			return fmt.Errorf("auth: %s sets both jwks_url and jwks_file: keep one", name)
		case is.JWKSURL == "" && is.JWKSFile == "":
			return fmt.Errorf("auth: %s has neither jwks_url nor jwks_file: name where its signing keys are", name)
		case is.JWKSURL != "" && !strings.HasPrefix(is.JWKSURL, "https://") && !strings.HasPrefix(is.JWKSURL, "http://"):
			return fmt.Errorf("auth: %s: jwks_url %q is not an http(s) URL", name, is.JWKSURL)
		case len(all) > 1 && is.Issuer == "":
			return fmt.Errorf("auth: %s has no issuer: with several trusted issuers each must name its iss, which tells their tokens apart", name)
		case seen[is.Issuer]:
			return fmt.Errorf("auth: %s: issuer %s is listed twice; merge the entries", name, is.Issuer)
		}
		seen[is.Issuer] = true
	}
	return nil
}

// issuerField names the i-th issuer of issuers() in messages.
func issuerField(c Config, i int) string {
	if c.JWKSURL != "" || c.JWKSFile != "" {
		if i == 0 {
			return "the issuer of the HYPERFLEET_JWT_* settings"
		}
		i--
	}
	return fmt.Sprintf("HYPERFLEET_JWT_ISSUERS_FILE issuers[%d]", i)
}

// Error is an authentication failure; Forbidden distinguishes a valid token
// that does not name a caller (403) from a missing or invalid one (401).
type Error struct {
	Forbidden bool
	Message   string
}

func (e *Error) Error() string { return e.Message }

// Principal is an authenticated caller: its identity and its token's
// verified claims (nil with authentication off).
type Principal struct {
	Identity string
	// Issuer is the iss of the trusted issuer whose keys verified the
	// token ("" for a single issuer that names none).
	Issuer string
	Claims map[string]any
}

// Authenticator checks bearer tokens.
type Authenticator struct {
	cfg     Config
	issuers []*issuer
	// unverified reads a token's iss before it is verified, to pick the
	// issuer whose keys verify it.
	unverified *jwt.Parser
}

// issuer is a trusted issuer with its parser and keys.
type issuer struct {
	Issuer
	parser *jwt.Parser
	keys   *keySource
}

// New loads the key sets. A JWKS URL that cannot be fetched yet is not
// fatal: keys are fetched again when a token arrives.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = 30 * time.Second
	}
	if cfg.MaxKeyAge <= 0 {
		cfg.MaxKeyAge = 5 * time.Minute
	}
	if cfg.ClockSkew <= 0 {
		cfg.ClockSkew = 30 * time.Second
	}
	if cfg.MaxTokenLifetime == 0 {
		cfg.MaxTokenLifetime = DefaultMaxTokenLifetime
	}
	a := &Authenticator{cfg: cfg, unverified: jwt.NewParser()}
	if !cfg.Enabled {
		return a, nil
	}
	for i, is := range cfg.issuers() {
		if is.IdentityClaim == "" {
			is.IdentityClaim = "email"
		}
		opts := []jwt.ParserOption{
			jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(), // an iat in the future (beyond the skew) is refused
			jwt.WithLeeway(cfg.ClockSkew),
		}
		if is.Issuer != "" {
			opts = append(opts, jwt.WithIssuer(is.Issuer))
		}
		if is.Audience != "" {
			opts = append(opts, jwt.WithAudience(is.Audience))
		}
		src := &keySource{url: is.JWKSURL, file: is.JWKSFile, client: cfg.HTTPClient, every: cfg.RefreshInterval, maxAge: cfg.MaxKeyAge}
		if src.url != "" && src.client == nil {
			client, err := jwksClient(firstNonEmpty(is.CAFile, cfg.CAFile))
			if err != nil {
				return nil, fmt.Errorf("auth: %s: %w", issuerField(cfg, i), err)
			}
			src.client = client
		}
		if src.file != "" {
			if err := src.load(); err != nil {
				return nil, fmt.Errorf("auth: %s: %w", issuerField(cfg, i), err)
			}
		} else {
			_, _ = src.refresh(ctx) // retried on first use
		}
		a.issuers = append(a.issuers, &issuer{Issuer: is, parser: jwt.NewParser(opts...), keys: src})
	}
	return a, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jwksClient fetches JWKS URLs, trusting caFile's certificates when set.
func jwksClient(caFile string) (*http.Client, error) {
	if caFile == "" {
		return &http.Client{Timeout: 10 * time.Second}, nil
	}
	tc, err := tlsfiles.ClientConfig(tlsfiles.Files{CA: caFile})
	if err != nil {
		return nil, fmt.Errorf("JWKS CA: %w", err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}, nil
}

// Enabled reports whether tokens are checked.
func (a *Authenticator) Enabled() bool { return a.cfg.Enabled }

// ProtectsService reports whether /metrics and the version metadata need a
// token.
func (a *Authenticator) ProtectsService() bool { return a.cfg.Enabled && a.cfg.ProtectService }

// Authenticate checks the Authorization header and returns the caller.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (string, error) {
	p, err := a.Verify(ctx, header)
	return p.Identity, err
}

// Verify checks the Authorization header and returns the caller with its
// token's claims.
func (a *Authenticator) Verify(ctx context.Context, header string) (Principal, error) {
	if !a.cfg.Enabled {
		return Principal{Identity: SystemIdentity}, nil
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if header == "" {
		return Principal{}, &Error{Message: "missing bearer token: send Authorization: Bearer <JWT>"}
	}
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, &Error{Message: "the Authorization header must be 'Bearer <JWT>'"}
	}
	is, err := a.issuerOf(token)
	if err != nil {
		return Principal{}, err
	}
	claims, err := is.verify(ctx, token)
	if err != nil {
		return Principal{}, &Error{Message: "invalid token: " + err.Error()}
	}
	if err := a.checkLifetime(claims); err != nil {
		return Principal{}, err
	}
	identity, _ := claims[is.IdentityClaim].(string)
	if strings.TrimSpace(identity) == "" {
		return Principal{}, &Error{Forbidden: true, Message: fmt.Sprintf("the token is valid but has no %q claim to identify the caller", is.IdentityClaim)}
	}
	if !ValidIdentity(identity) {
		return Principal{}, &Error{Forbidden: true, Message: fmt.Sprintf("the token's %q claim must be 1 to %d printable characters (it is stored as created_by/updated_by)", is.IdentityClaim, MaxIdentityLength)}
	}
	if strings.EqualFold(identity, SystemIdentity) {
		return Principal{}, &Error{Forbidden: true, Message: fmt.Sprintf("the identity %s is reserved for writes made with authentication off; a token cannot claim it", SystemIdentity)}
	}
	return Principal{Identity: identity, Issuer: is.Issuer.Issuer, Claims: claims}, nil
}

// IssuerNames are the iss values of the trusted issuers ("" for a single
// issuer that names none): what a tenancy file's system identities may
// name.
func (c Config) IssuerNames() []string {
	var out []string
	for _, is := range c.issuers() {
		out = append(out, is.Issuer)
	}
	return out
}

// issuerOf picks the issuer whose keys must verify a token: the one its
// (not yet verified) iss names, or the only one when a single issuer
// names none, which accepts any iss as before several were possible.
func (a *Authenticator) issuerOf(token string) (*issuer, error) {
	if len(a.issuers) == 1 && a.issuers[0].Issuer.Issuer == "" {
		return a.issuers[0], nil
	}
	claims := jwt.MapClaims{}
	if _, _, err := a.unverified.ParseUnverified(token, claims); err != nil {
		return nil, &Error{Message: "invalid token: " + err.Error()}
	}
	iss, _ := claims["iss"].(string)
	for _, is := range a.issuers {
		if is.Issuer.Issuer == iss {
			return is, nil
		}
	}
	return nil, &Error{Message: fmt.Sprintf("invalid token: issuer %q is not trusted", truncate(iss, 128))}
}

// verify checks a token with the issuer's keys. A signature that does not
// verify with a key fetched from a URL gets one more try after a fetch:
// the issuer may have replaced the key under the same id.
func (is *issuer) verify(ctx context.Context, token string) (jwt.MapClaims, error) {
	parse := func() (jwt.MapClaims, error) {
		claims := jwt.MapClaims{}
		_, err := is.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
			// RFC 7515 4.1.11: a token whose crit header names extensions
			// the recipient does not understand must be rejected; this API
			// understands none.
			if _, ok := t.Header["crit"]; ok {
				return nil, errors.New("the token has a crit header, and no critical extension is supported")
			}
			kid, _ := t.Header["kid"].(string)
			return is.keys.key(ctx, kid)
		})
		return claims, err
	}
	claims, err := parse()
	if err != nil && errors.Is(err, jwt.ErrTokenSignatureInvalid) && is.keys.url != "" {
		if fetched, ferr := is.keys.refresh(ctx); ferr == nil && fetched {
			claims, err = parse()
		}
	}
	return claims, err
}

// checkLifetime refuses a token that lives longer than MaxTokenLifetime:
// its exp after its iat (or, without iat, after now), beyond the skew.
func (a *Authenticator) checkLifetime(claims jwt.MapClaims) error {
	if a.cfg.MaxTokenLifetime < 0 {
		return nil
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return &Error{Message: "invalid token: no valid exp"}
	}
	from := time.Now()
	if iat, err := claims.GetIssuedAt(); err == nil && iat != nil {
		from = iat.Time
	}
	if exp.Sub(from) > a.cfg.MaxTokenLifetime+a.cfg.ClockSkew {
		return &Error{Message: fmt.Sprintf("invalid token: it is valid for %s, longer than the %s this API accepts (--jwt-max-token-lifetime)",
			exp.Sub(from).Round(time.Second), a.cfg.MaxTokenLifetime)}
	}
	return nil
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
