// Package tenancy scopes the API by tenant. A tenancy file names the
// dimensions of a tenancy (an organisation, a project...), where each is
// read from (a header a trusted gateway sets, or a claim of the caller's
// JWT) and who the system callers are (the reconciler and the adapters:
// a header carrying a shared secret, or identities the JWTs name). Every request
// resolves to a Caller: a system caller sees every tenant, any other sees
// only the resources created under its own tenancy.
package tenancy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/internal/systemsecret"
)

// Config is a tenancy file, in upstream HyperFleet's field names.
type Config struct {
	// SystemHeader names a header that marks a system caller when it
	// carries the system secret (SystemSecretFile's); "false" or absent:
	// not a system caller. Empty: no header makes one.
	SystemHeader string `yaml:"system_header"`
	// SystemSecretFile holds the shared secret the system header must
	// carry, read as the file is validated: a bare header would make
	// anyone who reaches the API directly, past the gateway, a system
	// caller. Required with SystemHeader.
	SystemSecretFile string `yaml:"system_secret_file"`
	// SystemIdentities are the tokens of system callers: their identity
	// claim and, with several trusted issuers, the issuer that signs them.
	SystemIdentities []SystemIdentity `yaml:"system_identities"`
	// Dimensions make up a tenancy; at least one is required.
	Dimensions []Dimension `yaml:"dimensions"`

	// systemSecret is SystemSecretFile's content, read by Validate.
	systemSecret systemsecret.Secret
}

// SystemCredential is what a system caller sends in gateway style: the
// system header and the secret; ok is false without a system header or
// before Validate read the secret. The in-process workers send it.
func (c *Config) SystemCredential() (header, secret string, ok bool) {
	if c.SystemHeader == "" || !c.systemSecret.Set() {
		return "", "", false
	}
	return c.SystemHeader, c.systemSecret.Value(), true
}

// SystemIdentity names a system caller's token: the value of its identity
// claim, and the issuer (iss) that must have signed it. A plain string in
// the file is an identity of any trusted issuer, which is only accepted
// while a single issuer is trusted: with several, a user issuer's token
// could claim a service's name.
type SystemIdentity struct {
	Issuer   string `yaml:"issuer"`
	Identity string `yaml:"identity"`
}

// UnmarshalYAML reads `svc-adapter` or `{issuer: ..., identity: ...}`.
func (s *SystemIdentity) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&s.Identity)
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a system identity is a string or {issuer, identity}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch key := n.Content[i].Value; key {
		case "issuer":
			if err := n.Content[i+1].Decode(&s.Issuer); err != nil {
				return err
			}
		case "identity":
			if err := n.Content[i+1].Decode(&s.Identity); err != nil {
				return err
			}
		default:
			return fmt.Errorf("line %d: field %s not found in a system identity (the fields are issuer and identity)", n.Content[i].Line, clip(key))
		}
	}
	return nil
}

func (s SystemIdentity) String() string {
	if s.Issuer == "" {
		return s.Identity
	}
	return s.Identity + " of " + s.Issuer
}

// Dimension is one part of a tenancy, read from exactly one source.
type Dimension struct {
	// Key names the dimension in a resource's tenancy ("org").
	Key string `yaml:"key"`
	// Header is a header a trusted gateway sets (X-Tenant-Org).
	Header string `yaml:"header"`
	// Claim is a claim of the caller's JWT (org_id), for deployments
	// without a gateway.
	Claim string `yaml:"claim"`
	// Required: a caller without it is refused; an optional dimension a
	// caller does not send is absent from its tenancy.
	Required bool `yaml:"required"`
}

// Source says where a dimension is read from, for messages: header
// X-Tenant-Org, claim org_id.
func (d Dimension) Source() string {
	if d.Header != "" {
		return "header " + d.Header
	}
	return "claim " + d.Claim
}

// MaxFileSize bounds a tenancy file: a handful of dimensions and
// identities, never megabytes.
const MaxFileSize = 1 << 20

// Load reads, decodes strictly and validates a tenancy file. jwtEnabled
// says whether the API checks tokens: claims and system identities need
// them; issuers are the iss values of the trusted issuers ("" for one
// that names none).
func Load(path string, jwtEnabled bool, issuers ...string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tenancy file: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("tenancy file %s: %w", path, err)
	}
	if len(raw) > MaxFileSize {
		return nil, fmt.Errorf("tenancy file %s is larger than %d bytes: it holds dimensions and identities, nothing else", path, MaxFileSize)
	}
	return Parse(path, raw, jwtEnabled, issuers...)
}

// Parse is Load on the file's content; name is used in errors.
func Parse(name string, raw []byte, jwtEnabled bool, issuers ...string) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("tenancy file %s is empty: list the tenancy's dimensions under dimensions: (docs/operator-guide.md, \"Tenants and roles\")", name)
		}
		return nil, fmt.Errorf("tenancy file %s: %w (the fields are system_header, system_secret_file, system_identities and dimensions, each dimension with key, header or claim, and required)", name, err)
	}
	if err := c.Validate(jwtEnabled, issuers...); err != nil {
		return nil, fmt.Errorf("tenancy file %s: %w", name, err)
	}
	return &c, nil
}

// Problem is one mistake in a tenancy file: the field, what is wrong and
// how to fix it.
type Problem struct {
	Field, Message, Fix string
}

func (p Problem) String() string { return p.Field + ": " + p.Message + "; " + p.Fix }

// ConfigError lists every mistake of a tenancy file at once.
type ConfigError struct{ Problems []Problem }

func (e *ConfigError) Error() string {
	lines := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

var (
	// keyPattern: a key is written into the canonical tenancy
	// (key=value,...) and returned as a JSON field name.
	keyPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	// headerPattern is RFC 9110's token, what a field name may hold.
	headerPattern = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
)

// reservedHeaders carry the caller's identity, the request's framing or
// its tracing: a gateway or client sets them for other reasons, so none
// of them may name a tenant or a system caller.
var reservedHeaders = []string{
	"Authorization", "Proxy-Authorization", "Cookie", "Host", "Content-Type", "Content-Length",
	"Transfer-Encoding", "Connection", "X-Request-Id", "Traceparent", "Tracestate", "Forwarded",
	"X-Forwarded-For", "X-Forwarded-User", "X-Remote-User",
}

// Validate checks the file as upstream does, and more: at least one
// required dimension; keys, header and claim names well formed and
// unique; no header that carries identity; claims and system identities
// only with tokens; some way to be a system caller, and with tokens only
// by a token (no header), bound to its issuer when several are trusted;
// without tokens, a system header only with a secret, which it reads
// from system_secret_file. issuers are the iss values of the trusted
// issuers.
func (c *Config) Validate(jwtEnabled bool, issuers ...string) error {
	var ps []Problem
	add := func(field, msg, fix string) { ps = append(ps, Problem{field, msg, fix}) }
	headers := map[string]string{} // canonical name -> field that uses it
	checkHeader := func(field, name string) {
		canon := http.CanonicalHeaderKey(name)
		switch {
		case !headerPattern.MatchString(name):
			add(field, fmt.Sprintf("%q is not a valid header name", clip(name)), "use letters, digits and '-', e.g. X-Tenant-Org")
		case isReserved(canon):
			add(field, fmt.Sprintf("%s carries the caller's identity or the request itself", canon), "name a header of its own that the gateway sets, e.g. X-Tenant-Org")
		case headers[canon] != "":
			add(field, fmt.Sprintf("header %s is already used by %s", canon, headers[canon]), "give every dimension and the system header a header of its own")
		default:
			headers[canon] = field
		}
	}
	if c.SystemHeader != "" {
		checkHeader("system_header", c.SystemHeader)
		if jwtEnabled {
			add("system_header", fmt.Sprintf("with JWT authentication on, any holder of a token (a tenant's included) could send %s: true and be a system caller", c.SystemHeader),
				"remove system_header and list the reconciler's and the adapters' token identities under system_identities")
		} else {
			c.readSystemSecret(add)
		}
	} else if c.SystemSecretFile != "" {
		add("system_secret_file", "is set, but system_header is not, so no header carries the secret",
			"set system_header (e.g. X-HyperFleet-System), or remove system_secret_file")
	}
	c.checkDimensions(jwtEnabled, add, checkHeader)
	c.checkSystemIdentities(jwtEnabled, issuers, add)
	if c.SystemHeader == "" && len(c.SystemIdentities) == 0 {
		add("system_header", "no caller can be a system caller, so the reconciler and the adapters could not report status",
			"set system_header and system_secret_file (a header the workers send with the secret) or system_identities (the identities of their tokens)")
	}
	if len(ps) > 0 {
		return &ConfigError{Problems: ps}
	}
	return nil
}

// checkDimensions checks the dimensions: at least one, and required;
// keys well formed and unique; each read from exactly one of a header
// (through checkHeader) or a claim, a claim only with tokens.
func (c *Config) checkDimensions(jwtEnabled bool, add func(field, msg, fix string), checkHeader func(field, name string)) {
	if len(c.Dimensions) == 0 {
		add("dimensions", "no dimension is listed", "list at least one, e.g. {key: org, header: X-Tenant-Org, required: true}")
	}
	keys := map[string]bool{}
	required := false
	for i, d := range c.Dimensions {
		field := fmt.Sprintf("dimensions[%d]", i)
		switch {
		case d.Key == "":
			add(field+".key", "the key is missing", "name the dimension, e.g. key: org")
		case !keyPattern.MatchString(d.Key):
			add(field+".key", fmt.Sprintf("%q is not a valid key", clip(d.Key)), "start with a lowercase letter, then up to 62 lowercase letters, digits, '_' or '-'")
		case keys[d.Key]:
			add(field+".key", fmt.Sprintf("key %s is listed twice", d.Key), "give every dimension its own key")
		default:
			keys[d.Key] = true
		}
		required = required || d.Required
		switch {
		case d.Header != "" && d.Claim != "":
			add(field, "both header and claim are set", "set exactly one: header for a gateway, claim for a JWT")
		case d.Header == "" && d.Claim == "":
			add(field, "neither header nor claim is set", "set header (a header the gateway sets) or claim (a claim of the caller's JWT)")
		case d.Header != "":
			checkHeader(field+".header", d.Header)
		case !validClaimName(d.Claim):
			add(field+".claim", fmt.Sprintf("%q is not a valid claim name", clip(d.Claim)), "use 1 to 256 printable characters without spaces, e.g. org_id")
		case !jwtEnabled:
			add(field+".claim", fmt.Sprintf("claim %s needs tokens, and --jwt-enabled (HYPERFLEET_JWT_ENABLED) is off", d.Claim), "turn JWT authentication on, or read the dimension from a gateway header instead")
		}
	}
	if len(c.Dimensions) > 0 && !required {
		add("dimensions", "no dimension is required, so a caller could resolve no tenancy at all", "mark at least one dimension required: true")
	}
}

// checkSystemIdentities checks the token identities of system callers:
// well formed, listed once, bound to a trusted issuer when several are
// trusted, and only with tokens.
func (c *Config) checkSystemIdentities(jwtEnabled bool, issuers []string, add func(field, msg, fix string)) {
	ids := map[SystemIdentity]bool{}
	for i, id := range c.SystemIdentities {
		field := fmt.Sprintf("system_identities[%d]", i)
		switch {
		case !auth.ValidIdentity(id.Identity):
			add(field, fmt.Sprintf("%q is not an identity a token can carry", clip(id.Identity)), "use the exact value of the JWT identity claim (1 to 256 printable characters)")
		case strings.EqualFold(id.Identity, auth.SystemIdentity):
			add(field, auth.SystemIdentity+" is the identity of every caller with authentication off", "name the identity of the reconciler's or the adapters' token")
		case ids[id]:
			add(field, fmt.Sprintf("%s is listed twice", id), "list each identity once")
		case id.Issuer == "" && len(issuers) > 1:
			add(field, fmt.Sprintf("%s names no issuer, and %d issuers are trusted: a token of any of them claiming %s would be a system caller", id.Identity, len(issuers), id.Identity),
				fmt.Sprintf("name the issuer that signs the service's tokens: {issuer: %s, identity: %s}", issuerList(issuers), id.Identity))
		case id.Issuer != "" && len(issuers) > 0 && !slices.Contains(issuers, id.Issuer):
			add(field+".issuer", fmt.Sprintf("%s is not a trusted issuer", clip(id.Issuer)), "name one of the trusted issuers: "+issuerList(issuers))
		default:
			ids[id] = true
		}
	}
	if len(c.SystemIdentities) > 0 && !jwtEnabled {
		add("system_identities", "system identities come from tokens, and --jwt-enabled (HYPERFLEET_JWT_ENABLED) is off", "turn JWT authentication on, or mark system callers with system_header and system_secret_file")
	}
}

// readSystemSecret reads system_secret_file, which a system header
// needs: without a secret, anyone who reaches the API past the gateway
// could send the header and be a system caller.
func (c *Config) readSystemSecret(add func(field, msg, fix string)) {
	c.systemSecret = systemsecret.Secret{}
	fix := systemsecret.Fix + "; name the file in system_secret_file and give the same file to the workers' --api-system-secret-file (docs/operator-guide.md, \"Tenants and roles\")"
	if c.SystemSecretFile == "" {
		add("system_secret_file", fmt.Sprintf("is not set, so anyone who reaches the API directly could send %s and be a system caller", c.SystemHeader), fix)
		return
	}
	s, err := systemsecret.Read(c.SystemSecretFile)
	if err != nil {
		add("system_secret_file", err.Error(), fix)
		return
	}
	c.systemSecret = s
}

// issuerList names the trusted issuers for a message.
func issuerList(issuers []string) string {
	var named []string
	for _, is := range issuers {
		if is != "" {
			named = append(named, is)
		}
	}
	if len(named) == 0 {
		return "<the iss of the service's tokens>"
	}
	return strings.Join(named, " | ")
}

func isReserved(canon string) bool {
	for _, r := range reservedHeaders {
		if http.CanonicalHeaderKey(r) == canon {
			return true
		}
	}
	return false
}

func validClaimName(s string) bool {
	if s == "" || len(s) > 256 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// clip shortens a value echoed in a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	n := 64
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
