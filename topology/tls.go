package topology

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TemporalTLS names the PEM files of the production shape's mutual TLS
// with Temporal, kept under <state-dir>/tls: without it any local process
// could start or signal a reconcile workflow on the frontend, or reach
// history and matching directly, and get the workers to act for it.
type TemporalTLS struct {
	// CA signs both certificates and is the only authority the services
	// and clients trust. Its key stays beside it (0600) to renew them.
	CA, caKey string
	// Server is Temporal's services' certificate: served by the frontend,
	// history, matching and worker, and presented by them to each other.
	ServerCert, ServerKey string
	// Client is HyperFleet's certificate: the API replicas, the workers,
	// the Web UI and the supervisor present it to the frontend.
	ClientCert, ClientKey string
}

// TemporalServerName is the name Temporal's certificate is issued for,
// beside 127.0.0.1, and the name its own services verify.
const TemporalServerName = "localhost"

const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	// renewBefore: a certificate this close to its end is issued again
	// at the next start, so a shape restarted now and then never meets
	// an expired one.
	renewBefore = 30 * 24 * time.Hour
)

// ensureTemporalTLS makes sure dir holds a CA and the two certificates it
// signs, valid for at least renewBefore past now: files that are missing,
// unreadable, not signed by the CA or near their end are issued again;
// good ones are kept, so a restart changes nothing.
func ensureTemporalTLS(dir string, now time.Time) (TemporalTLS, error) {
	f := TemporalTLS{
		CA: filepath.Join(dir, "ca.pem"), caKey: filepath.Join(dir, "ca-key.pem"),
		ServerCert: filepath.Join(dir, "temporal.pem"), ServerKey: filepath.Join(dir, "temporal-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("TLS folder %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return f, fmt.Errorf("TLS folder %s: %w", dir, err)
	}
	ca, caKey, err := loadPair(f.CA, f.caKey)
	if err != nil || !lasts(ca, now) || !ca.IsCA {
		if ca, caKey, err = issue(f.CA, f.caKey, nil, nil, caTemplate(now)); err != nil {
			return f, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, leaf := range []struct {
		cert, key string
		tmpl      *x509.Certificate
		usage     []x509.ExtKeyUsage
	}{
		// The services' certificate serves and, between the services,
		// also authenticates the caller.
		{f.ServerCert, f.ServerKey, leafTemplate("temporal", now, true), []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{f.ClientCert, f.ClientKey, leafTemplate("hyperfleet", now, false), []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		cert, _, err := loadPair(leaf.cert, leaf.key)
		if err == nil && lasts(cert, now) {
			if _, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: leaf.usage, CurrentTime: now}); err == nil {
				continue
			}
		}
		leaf.tmpl.ExtKeyUsage = leaf.usage
		if _, _, err := issue(leaf.cert, leaf.key, ca, caKey, leaf.tmpl); err != nil {
			return f, err
		}
	}
	return f, nil
}

// lasts reports whether c is valid now and for renewBefore after it.
func lasts(c *x509.Certificate, now time.Time) bool {
	return !now.Before(c.NotBefore) && now.Add(renewBefore).Before(c.NotAfter)
}

func caTemplate(now time.Time) *x509.Certificate {
	return &x509.Certificate{
		Subject:               pkix.Name{CommonName: "HyperFleet run-ha Temporal CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
}

func leafTemplate(name string, now time.Time, server bool) *x509.Certificate {
	c := &x509.Certificate{
		Subject:   pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour),
		NotAfter:  now.Add(leafLifetime),
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}
	if server {
		c.DNSNames = []string{TemporalServerName}
		c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	return c
}

// issue makes a key and a certificate from tmpl, signed by parent (self
// when nil), and writes both: the key 0600, the certificate 0644.
func issue(certFile, keyFile string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %s: %w", certFile, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	// The key first: a certificate without its key is issued again at
	// the next start, never served.
	if err := writePEM(keyFile, "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func writePEM(file, typ string, der []byte, mode os.FileMode) error {
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: typ, Bytes: der}); err != nil {
		return err
	}
	if err := writeFile(file, b.Bytes(), mode); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// writeFile writes data through a temporary file renamed into place, so
// a crash never leaves half a file, with mode set before the contents
// land (a temporary file an older release left keeps its own mode, so it
// is set in any case).
func writeFile(file string, data []byte, mode os.FileMode) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// loadPair reads a certificate and its EC key, and checks that they
// belong together.
func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := readPEM(certFile, "CERTIFICATE")
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(cert)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certFile, err)
	}
	kb, err := readPEM(keyFile, "EC PRIVATE KEY")
	if err != nil {
		return nil, nil, err
	}
	k, err := x509.ParseECPrivateKey(kb)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&k.PublicKey) {
		return nil, nil, fmt.Errorf("%s does not match %s", keyFile, certFile)
	}
	return c, k, nil
}

func readPEM(file, typ string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != typ {
		return nil, errors.New(file + ": no PEM " + typ)
	}
	return blk.Bytes, nil
}
