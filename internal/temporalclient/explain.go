package temporalclient

import (
	"fmt"
	"strings"
)

// tlsHints map what gRPC and crypto/tls say when the two ends disagree
// about TLS to the setting that fixes it: their own words ("error reading
// server preface: EOF") do not say that the server wanted TLS.
var tlsHints = []struct{ says, hint string }{
	{"error reading server preface", "the server may require TLS: pass --temporal-tls-ca (and --temporal-tls-cert with --temporal-tls-key for mutual TLS)"},
	{"first record does not look like a TLS handshake", "the server does not serve TLS at this address: leave out the --temporal-tls-* flags"},
	{"certificate required", "the server requires a client certificate: pass --temporal-tls-cert and --temporal-tls-key"},
	{"bad certificate", "the server refused the client certificate: pass one its CA signed (--temporal-tls-cert, --temporal-tls-key)"},
	{"unknown certificate authority", "the server refused the client certificate: pass one its CA signed (--temporal-tls-cert, --temporal-tls-key)"},
	{"certificate signed by unknown authority", "the server's certificate is not signed by a CA this client trusts: pass that CA with --temporal-tls-ca"},
	{"certificate is valid for", "the server's certificate names another host: pass the name it holds with --temporal-tls-server-name"},
}

// Explain adds to a Temporal connection error the setting that would fix
// it, when the error is a TLS mismatch; other errors come back as they
// are.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, h := range tlsHints {
		if strings.Contains(msg, h.says) {
			return fmt.Errorf("%w (%s)", err, h.hint)
		}
	}
	return err
}
