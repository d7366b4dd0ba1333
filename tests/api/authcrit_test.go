package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver"
)

// Tokens: a crit header is refused (RFC 7515: this API understands no
// critical extension), system@hyperfleet.local is reserved for writes made
// with auth off, and every failed authentication is logged at info with
// its reason and never the token.
func TestAuthRefusesCritAndReservedIdentity(t *testing.T) {
	good := newSigner(t, "key-1")
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, good.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, backend string) {
		var logs syncBuffer
		e := newEnv(t, backend, func(o *apiserver.Options) {
			o.Logger = zerolog.New(&logs).Level(zerolog.InfoLevel)
			o.Auth.Enabled = true
			o.Auth.JWKSFile = jwks
			o.Auth.Issuer = "https://sso.example.com"
			o.Auth.Audience = "hyperfleet"
		})
		e.token = good.token(t, claims(nil))
		e.do("GET", base+"/clusters", nil).expect(200)

		crit := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(func(c jwt.MapClaims) { c["x-ext"] = 1 }))
		crit.Header["kid"] = good.kid
		crit.Header["crit"] = []string{"x-ext"}
		critToken, err := crit.SignedString(good.key)
		if err != nil {
			t.Fatal(err)
		}
		e.token = critToken
		if p := e.do("GET", base+"/clusters", nil).problem(401, "HYPERFLEET-AUT-001"); !strings.Contains(p.Detail, "crit") {
			t.Errorf("crit token: %+v", p)
		}
		for _, id := range []string{"system@hyperfleet.local", "SYSTEM@HyperFleet.local"} {
			e.token = good.token(t, claims(func(c jwt.MapClaims) { c["email"] = id }))
			if p := e.do("POST", base+"/clusters", clusterBody("imposter")).problem(403, "HYPERFLEET-AUZ-001"); !strings.Contains(p.Detail, "reserved") {
				t.Errorf("%s: %+v", id, p)
			}
		}
		expired := good.token(t, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }))
		e.token = expired
		e.do("GET", base+"/clusters", nil).problem(401, "HYPERFLEET-AUT-001")
		e.token = ""
		e.do("GET", base+"/clusters", nil).problem(401, "HYPERFLEET-AUT-001")

		out := logs.String()
		lines := 0
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, "authentication failed") {
				continue
			}
			lines++
			if !strings.Contains(line, `"level":"info"`) || !strings.Contains(line, `"reason":`) {
				t.Errorf("failed authentication logged as %s", line)
			}
		}
		if lines != 5 {
			t.Errorf("%d failed authentications logged, want 5:\n%s", lines, out)
		}
		for _, tok := range []string{critToken, expired, strings.Split(expired, ".")[2]} {
			if strings.Contains(out, tok) {
				t.Fatalf("the log holds a token")
			}
		}
		var l struct{ Total int64 }
		e.token = good.token(t, claims(nil))
		e.do("GET", base+"/clusters", nil).expect(200).into(&l)
		if l.Total != 0 {
			t.Errorf("refused tokens created %d clusters", l.Total)
		}
	})
}
