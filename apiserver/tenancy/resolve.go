package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hyperfleet/hyperfleet/resource"
)

// Caller is what a request may see and do.
type Caller struct {
	// System callers (the reconciler, the adapters) see every tenant and
	// may only write statuses.
	System bool
	// Tenancy is a tenant's tenancy: a value per dimension it sent (every
	// required one, the optional ones it has). Nil for a system caller.
	Tenancy map[string]string
	// Key is Tenancy's canonical form (resource.TenancyKey); "" for a
	// system caller.
	Key string
}

// MaxValueLength bounds a dimension's value, as upstream does.
const MaxValueLength = 63

// Request is what a tenancy is resolved from.
type Request struct {
	// Header returns every value a header was sent with (http.Header's
	// Values).
	Header func(name string) []string
	// Identity is the caller's identity claim (when tokens are checked),
	// and Issuer the iss of the token's trusted issuer ("" for one that
	// names none).
	Identity string
	Issuer   string
	// Claims are the caller's verified token claims; nil without a token.
	Claims map[string]any
}

// Refusal is a caller the tenancy refuses: a dimension missing or
// invalid, or a system header that is neither the secret nor false.
// Source names where the bad value came from (header X-Tenant-Org).
type Refusal struct {
	Source  string
	Message string
	// Credential: the system header carries something other than the
	// secret, a failed authentication (401) rather than a missing
	// tenancy. Message never holds what was sent.
	Credential bool
}

func (r *Refusal) Error() string { return r.Message }

// Resolve decides who the caller is. It never panics on any input: the
// headers and claims come from the client (FuzzResolve).
func (c *Config) Resolve(req Request) (Caller, *Refusal) {
	system, refusal := c.isSystem(req)
	if refusal != nil {
		return Caller{}, refusal
	}
	if system {
		return Caller{System: true}, nil
	}
	t := map[string]string{}
	for _, d := range c.Dimensions {
		v, present, refusal := c.value(d, req)
		if refusal != nil {
			return Caller{}, refusal
		}
		if !present {
			if d.Required {
				return Caller{}, &Refusal{Source: d.Source(), Message: missing(d)}
			}
			continue
		}
		if !ValidValue(v) {
			return Caller{}, &Refusal{Source: d.Source(), Message: invalidValue(d, v)}
		}
		t[d.Key] = v
	}
	if len(t) == 0 {
		// Validate requires a required dimension, so only a Config built
		// by hand gets here; refusing beats an empty (unscoped) tenancy.
		return Caller{}, &Refusal{Source: "dimensions", Message: "the request resolves no tenancy dimension; send the dimensions the tenancy file lists"}
	}
	return Caller{Tenancy: t, Key: resource.TenancyKey(t)}, nil
}

func missing(d Dimension) string {
	if d.Header != "" {
		return fmt.Sprintf("the tenancy dimension %s is required: the gateway must send header %s", d.Key, d.Header)
	}
	return fmt.Sprintf("the tenancy dimension %s is required: the token has no %s claim", d.Key, d.Claim)
}

// isSystem reads the system header and the identity. The header makes a
// system caller only with the secret, compared in constant time; false
// or absent is a tenant; anything else is refused without being echoed.
func (c *Config) isSystem(req Request) (bool, *Refusal) {
	for _, id := range c.SystemIdentities {
		if req.Identity != "" && req.Identity == id.Identity && (id.Issuer == "" || id.Issuer == req.Issuer) {
			return true, nil
		}
	}
	if c.SystemHeader == "" || req.Header == nil {
		return false, nil
	}
	values := req.Header(c.SystemHeader)
	source := "header " + c.SystemHeader
	switch {
	case len(values) == 0:
		return false, nil
	case len(values) > 1:
		return false, &Refusal{Source: source, Credential: true,
			Message: fmt.Sprintf("header %s is sent %d times; send it once: the system secret, or false", c.SystemHeader, len(values))}
	}
	v := strings.TrimSpace(values[0])
	switch {
	case v == "", strings.EqualFold(v, "false"):
		return false, nil
	case c.systemSecret.Matches(v):
		return true, nil
	case strings.EqualFold(v, "true"):
		return false, &Refusal{Source: source, Credential: true, Message: fmt.Sprintf(
			"header %s is true, which makes no system caller: a system caller sends the shared secret of the tenancy file's system_secret_file (the workers' --api-system-secret-file)", c.SystemHeader)}
	default:
		return false, &Refusal{Source: source, Credential: true, Message: fmt.Sprintf(
			"header %s is not the system secret: a system caller sends the secret of the tenancy file's system_secret_file, any other caller false or nothing", c.SystemHeader)}
	}
}

// value reads one dimension; present is false when the caller did not
// send it (an empty header counts as not sent).
func (c *Config) value(d Dimension, req Request) (v string, present bool, refusal *Refusal) {
	if d.Header != "" {
		if req.Header == nil {
			return "", false, nil
		}
		values := req.Header(d.Header)
		switch {
		case len(values) == 0:
			return "", false, nil
		case len(values) > 1:
			return "", false, &Refusal{Source: d.Source(), Message: fmt.Sprintf("header %s (tenancy dimension %s) is sent %d times; send one value", d.Header, d.Key, len(values))}
		}
		v = strings.TrimSpace(values[0])
		return v, v != "", nil
	}
	raw, ok := req.Claims[d.Claim]
	if !ok || raw == nil {
		return "", false, nil
	}
	v, ok = claimText(raw)
	if !ok {
		return "", false, &Refusal{Source: d.Source(), Message: fmt.Sprintf("claim %s (tenancy dimension %s) is a %s; it must be a string or an integer", d.Claim, d.Key, jsonType(raw))}
	}
	return v, v != "", nil
}

// claimText renders a claim as a dimension value: a string as it is, an
// integer (org ids often are) in decimal.
func claimText(raw any) (string, bool) {
	switch x := raw.(type) {
	case string:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return strconv.FormatInt(int64(x), 10), true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return strconv.FormatInt(n, 10), true
		}
	}
	return "", false
}

func jsonType(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number that is not an integer"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// ValidValue reports whether a dimension's value may be stored: 1 to 63
// characters of [A-Za-z0-9._-], as upstream allows. It never holds the
// canonical form's separators.
func ValidValue(v string) bool {
	if v == "" || len(v) > MaxValueLength {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

type callerKey struct{}

// WithCaller records the caller a request resolved to.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// FromContext is the caller WithCaller recorded; without one (tenancy off,
// the API's own passes) the caller is unscoped, as every caller was
// before tenancy existed.
func FromContext(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Sees reports whether a caller may see a resource of the given tenancy
// (its canonical form): an unscoped caller sees every one, a tenant only
// its own.
func (c Caller) Sees(tenancyKey string) bool { return c.Key == "" || c.Key == tenancyKey }
