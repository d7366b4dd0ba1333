package temporalclient

import (
	"errors"
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	for _, c := range []struct {
		err  string
		hint string // "" when the error stays as it is
	}{
		{`connection error: desc = "error reading server preface: EOF"`, "may require TLS"},
		{`tls: first record does not look like a TLS handshake`, "does not serve TLS"},
		{`remote error: tls: certificate required`, "requires a client certificate"},
		{`remote error: tls: bad certificate`, "refused the client certificate"},
		{`remote error: tls: unknown certificate authority`, "refused the client certificate"},
		{`tls: failed to verify certificate: x509: certificate signed by unknown authority`, "--temporal-tls-ca"},
		{`x509: certificate is valid for localhost, not temporal.example`, "--temporal-tls-server-name"},
		{`context deadline exceeded`, ""},
		{`Namespace default is not found`, ""},
	} {
		base := errors.New(c.err)
		got := Explain(base)
		if !errors.Is(got, base) {
			t.Errorf("Explain(%q) lost the error it wraps", c.err)
		}
		switch {
		case c.hint == "" && got.Error() != c.err:
			t.Errorf("Explain(%q) = %q, want it unchanged", c.err, got)
		case c.hint != "" && !strings.Contains(got.Error(), c.hint):
			t.Errorf("Explain(%q) = %q, want a hint with %q", c.err, got, c.hint)
		}
	}
	if Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}
