package topology

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
)

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	der, err := readPEM(file, "CERTIFICATE")
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTemporalTLSIsIssuedOnceAndKeptPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	f, err := ensureTemporalTLS(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{f.caKey, f.ServerKey, f.ClientKey} {
		st, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", key, st.Mode().Perm())
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("%s has mode %v, want 0700", dir, st.Mode().Perm())
	}
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, f.CA))
	srv := readCert(t, f.ServerCert)
	for _, name := range []string{TemporalServerName, "127.0.0.1"} {
		if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the services' certificate does not serve %s: %v", name, err)
		}
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, DNSName: "temporal.example.com"}); err == nil {
		t.Error("the services' certificate serves a name it was not issued for")
	}
	cli := readCert(t, f.ClientCert)
	if _, err := cli.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate does not authenticate a client: %v", err)
	}
	if _, err := cli.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("the client certificate could serve as a server")
	}

	// A restart keeps every file as it was.
	before := map[string][]byte{}
	for _, file := range []string{f.CA, f.caKey, f.ServerCert, f.ServerKey, f.ClientCert, f.ClientKey} {
		before[file], _ = os.ReadFile(file)
	}
	if _, err := ensureTemporalTLS(dir, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for file, b := range before {
		if after, _ := os.ReadFile(file); !bytes.Equal(after, b) {
			t.Errorf("%s changed on a restart", file)
		}
	}
}

func TestTemporalTLSRenewsWhatNearsItsEndOrIsBroken(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	f, err := ensureTemporalTLS(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, f.CA)

	// Eleven months on, the leaves are within renewBefore of their end;
	// the CA is not, and stays.
	later := now.Add(leafLifetime - renewBefore + 24*time.Hour)
	if _, err := ensureTemporalTLS(dir, later); err != nil {
		t.Fatal(err)
	}
	if !readCert(t, f.CA).Equal(ca) {
		t.Error("the CA was replaced though it lasts for years")
	}
	if got := readCert(t, f.ServerCert); !got.NotAfter.After(later.Add(renewBefore)) {
		t.Errorf("the services' certificate ends %v, not renewed at %v", got.NotAfter, later)
	}

	// A key that does not match its certificate, and a lost CA key: both
	// are issued again, and the leaves follow the new CA.
	if err := os.WriteFile(f.ClientKey, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.caKey); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureTemporalTLS(dir, later); err != nil {
		t.Fatal(err)
	}
	if readCert(t, f.CA).Equal(ca) {
		t.Error("the CA was kept without its key")
	}
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, f.CA))
	for _, file := range []string{f.ServerCert, f.ClientCert} {
		if _, err := readCert(t, file).Verify(x509.VerifyOptions{Roots: pool, CurrentTime: later, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s is not signed by the new CA: %v", file, err)
		}
	}
	if _, _, err := loadPair(f.ClientCert, f.ClientKey); err != nil {
		t.Errorf("the client pair was not issued again: %v", err)
	}
}

// The files work as a server requiring client certificates and a client
// presenting them would use them: the shape's client is let in, a client
// without a certificate is not.
func TestTemporalTLSHandshake(t *testing.T) {
	f, err := ensureTemporalTLS(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, f.CA))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srvCert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	dial := func(files tlsfiles.Files) error {
		cfg, err := tlsfiles.ClientConfig(files)
		if err != nil {
			return err
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate on the first read.
		buf := make([]byte, 2)
		if _, err := c.Read(buf); err != nil {
			return err
		}
		if string(buf) != "ok" {
			return errors.New("unexpected reply " + string(buf))
		}
		return nil
	}
	if err := dial(tlsfiles.Files{CA: f.CA, Cert: f.ClientCert, Key: f.ClientKey}); err != nil {
		t.Errorf("the shape's client was refused: %v", err)
	}
	if err := dial(tlsfiles.Files{CA: f.CA}); err == nil {
		t.Error("a client without a certificate was let in")
	}
	if err := dial(tlsfiles.Files{}); err == nil {
		t.Error("a client that does not trust the shape's CA completed a handshake")
	}
}
