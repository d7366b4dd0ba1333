//go:build integration

package topology_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hyperfleet/hyperfleet/internal/pgcluster"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
	"github.com/hyperfleet/hyperfleet/topology"
)

// Contract (operator guide, "Production shape"): run-ha's PostgreSQL
// clusters and its Temporal services take no connection without the
// shape's own credentials. One shape serves both checks: starting one
// costs most of a minute.
func TestRunHACredentials(t *testing.T) {
	var state string
	s := startShape(t, func(c *topology.Config) {
		state = c.StateDir
		// HyperFleet's cluster as an older release left it; Temporal's is
		// new, so both ways a cluster gets its password are covered.
		trustingCluster(t, filepath.Join(state, "postgres"))
	})
	t.Run("DatabasesRequireTheirPassword", func(t *testing.T) { databasesRequireTheirPassword(t, s, state) })
	t.Run("TemporalRequiresMutualTLS", func(t *testing.T) { temporalRequiresMutualTLS(t, s, state) })
	t.Run("VersionsOverMutualTLS", func(t *testing.T) { versionsOverMutualTLS(t, s) })
}

// The clusters accept no connection without their generated password
// (scram-sha-256, kept 0600 beside each cluster's data), a cluster an
// older release created trusting every local connection is switched to
// the password at start, and Temporal's configuration files, which hold
// it, are readable by their owner only.
func databasesRequireTheirPassword(t *testing.T, s *shape, state string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ name, url string }{
		{"postgres", s.tp.DatabaseURL()},
		{"postgres-temporal", s.tp.TemporalDatabaseURL()},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := pingDB(ctx, u.String()); err != nil {
			t.Errorf("%s with its password: %v", c.name, err)
		}
		u.User = url.User("postgres")
		if err := pingDB(ctx, u.String()); err == nil || !strings.Contains(err.Error(), "password") {
			t.Errorf("%s without a password: err = %v, want a refusal that asks for the password", c.name, err)
		}
		u.User = url.UserPassword("postgres", "not-the-password")
		if err := pingDB(ctx, u.String()); err == nil {
			t.Errorf("%s accepted a wrong password", c.name)
		}
		fi, err := os.Stat(filepath.Join(state, c.name, "password"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s password file mode %v, want 0600", c.name, fi.Mode().Perm())
		}
	}
	configs, err := filepath.Glob(filepath.Join(state, "config", "temporal-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withPassword := 0
	for _, f := range configs {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "password:") {
			continue
		}
		withPassword++
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s holds the database password: mode %v (%v), want 0600", f, fi.Mode().Perm(), err)
		}
	}
	if withPassword == 0 {
		t.Errorf("no Temporal configuration among %v names the database password: Temporal could not have connected", configs)
	}
}

// Every gRPC port of Temporal's four services (the frontend, and history
// and matching, which would take calls that bypass it) refuses plain
// text, a client without a certificate and a certificate from another
// CA, and serves the shape's own client certificate; the key files are
// the owner's alone.
func temporalRequiresMutualTLS(t *testing.T, s *shape, state string) {
	files := s.tp.TemporalTLS()
	if fi, err := os.Stat(filepath.Join(state, "tls")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s/tls: %v (mode %v), want a folder of mode 0700", state, err, fi.Mode().Perm())
	}
	if fi, err := os.Stat(files.ClientKey); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v (mode %v), want 0600", files.ClientKey, err, fi.Mode().Perm())
	}
	stranger := strangerCertificate(t)
	for _, svc := range topology.TemporalServices {
		addr := s.tp.TemporalServiceAddress(svc)
		for _, c := range []struct {
			name  string
			creds credentials.TransportCredentials
			serve bool
		}{
			{"plain text", insecure.NewCredentials(), false},
			{"TLS without a client certificate", tlsCreds(t, tlsfiles.Files{CA: files.CA}, nil), false},
			{"a certificate from another CA", tlsCreds(t, tlsfiles.Files{CA: files.CA}, &stranger), false},
			{"the shape's client certificate", tlsCreds(t, tlsfiles.Files{CA: files.CA, Cert: files.ClientCert, Key: files.ClientKey}, nil), true},
		} {
			err := grpcHealth(addr, c.creds)
			switch {
			case c.serve && err != nil:
				t.Errorf("temporal-%s at %s refused %s: %v", svc, addr, c.name, err)
			case !c.serve && err == nil:
				t.Errorf("temporal-%s at %s served %s", svc, addr, c.name)
			}
		}
	}
}

// The operator's way in: `hyperfleet versions` with the files the banner
// names lists the releases; without them it fails saying what is missing.
func versionsOverMutualTLS(t *testing.T, s *shape) {
	files := s.tp.TemporalTLS()
	addr := s.tp.TemporalAddress()
	out, err := exec.Command(testenv.Binary(t), "versions", "--temporal-address", addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "may require TLS: pass --temporal-tls-ca") {
		t.Errorf("hyperfleet versions without TLS: err = %v, want a failure that names the TLS flags:\n%s", err, out)
	}
	out, err = exec.Command(testenv.Binary(t), "versions", "--temporal-address", addr,
		"--temporal-tls-ca", files.CA, "--temporal-tls-cert", files.ClientCert, "--temporal-tls-key", files.ClientKey).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "release-a") {
		t.Errorf("hyperfleet versions with the shape's certificate: err = %v, want the release listed:\n%s", err, out)
	}
}

func tlsCreds(t *testing.T, f tlsfiles.Files, cert *tls.Certificate) credentials.TransportCredentials {
	t.Helper()
	cfg, err := tlsfiles.ClientConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return credentials.NewTLS(cfg)
}

// grpcHealth asks the gRPC health service at addr, as any client could.
func grpcHealth(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// strangerCertificate is a client certificate no one in the shape issued.
func strangerCertificate(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hyperfleet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func pingDB(ctx context.Context, dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// trustingCluster creates the cluster an older run-ha created in dir:
// initdb with --auth=trust and no password file.
func trustingCluster(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cred, _, err := pgcluster.Owner(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := pgcluster.BinDir("", "set PATH")
	if err != nil {
		t.Fatal(err)
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C")
	if cred != nil {
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb --auth=trust in %s: %v\n%s", dir, err, out)
	}
}
