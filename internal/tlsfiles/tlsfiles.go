// Package tlsfiles builds TLS client configurations from PEM files, the way
// operators hand certificates to pods.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files name the PEM files of a TLS client.
type Files struct {
	// CA verifies the server (empty: the system roots).
	CA string
	// Cert and Key are the client certificate for mutual TLS; both or none.
	Cert string
	Key  string
	// ServerName overrides the name checked in the server's certificate.
	ServerName string
	// InsecureSkipVerify disables verification (test setups only).
	InsecureSkipVerify bool
}

// ClientConfig reads the files. Errors name the file that failed.
func ClientConfig(f Files) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName, InsecureSkipVerify: f.InsecureSkipVerify} //nolint:gosec // opt-in
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate found", f.CA)
		}
		tc.RootCAs = pool
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s / %s: %w", f.Cert, f.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
