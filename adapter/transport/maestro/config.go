package maestro

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Defaults of the optional settings.
const (
	DefaultTimeout                  = 10 * time.Second
	DefaultServerHealthinessTimeout = 20 * time.Second
)

// Config is one connection to a Maestro server: its gRPC broker receives
// ManifestWorks, its HTTP API answers reads.
type Config struct {
	// GRPCAddress is host:port of the gRPC server.
	GRPCAddress string
	// HTTPAddress is the base URL of the REST API (http:// only with
	// Insecure).
	HTTPAddress string
	// SourceID names the ManifestWorks this client owns; every adapter
	// needs its own.
	SourceID string
	// Insecure allows plaintext gRPC and an http:// API (local use).
	Insecure bool
	// CAFile verifies the servers; CertFile and KeyFile authenticate this
	// client (mutual TLS); TokenFile holds a bearer token sent with every
	// gRPC call instead. HTTPCAFile verifies the REST API when it has
	// another CA than gRPC (default: CAFile). ServerName overrides the name
	// checked in the gRPC server's certificate.
	CAFile, CertFile, KeyFile, TokenFile, HTTPCAFile, ServerName string
	// Timeout bounds each REST call and each publish (default 10s).
	Timeout time.Duration
	// ServerHealthinessTimeout is how long the gRPC stream may miss the
	// server's heartbeats before it is re-established (default 20s).
	ServerHealthinessTimeout time.Duration
	// KeepaliveTime and KeepaliveTimeout ping an idle gRPC connection
	// (both 0: no keepalive).
	KeepaliveTime, KeepaliveTimeout time.Duration
}

// Setting names, for messages: the adapter-config field and the
// environment variable (and flag) that overrides it.
const (
	settingGRPC   = "clients.maestro.grpc_server_address (HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS, --maestro-grpc-server-address)"
	settingHTTP   = "clients.maestro.http_server_address (HYPERFLEET_MAESTRO_HTTP_SERVER_ADDRESS, --maestro-http-server-address)"
	settingSource = "clients.maestro.source_id (HYPERFLEET_MAESTRO_SOURCE_ID, --maestro-source-id)"
)

// WithDefaults fills the optional durations.
func (c Config) WithDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ServerHealthinessTimeout <= 0 {
		c.ServerHealthinessTimeout = DefaultServerHealthinessTimeout
	}
	if c.HTTPCAFile == "" {
		c.HTTPCAFile = c.CAFile
	}
	return c
}

// Validate reports every missing or inconsistent setting at once, each with
// the field to set.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.GRPCAddress == "" {
		add("%s is not set: set it to the Maestro gRPC server, e.g. maestro-grpc.maestro:8090", settingGRPC)
	} else if _, port, err := net.SplitHostPort(c.GRPCAddress); err != nil || port == "" {
		add("%s %q is not host:port: write e.g. maestro-grpc.maestro:8090 (no scheme)", settingGRPC, c.GRPCAddress)
	}
	if c.HTTPAddress == "" {
		add("%s is not set: set it to the Maestro REST API, e.g. https://maestro.maestro:8000", settingHTTP)
	} else if u, err := url.Parse(c.HTTPAddress); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		add("%s %q is not an http:// or https:// URL: write e.g. https://maestro.maestro:8000", settingHTTP, c.HTTPAddress)
	} else if u.Scheme == "http" && !c.Insecure {
		add("%s %q is plain http: use https://, or set clients.maestro.insecure: true (HYPERFLEET_MAESTRO_INSECURE) for a local server", settingHTTP, c.HTTPAddress)
	}
	if c.SourceID == "" {
		add("%s is not set: give every adapter its own source id (the adapter name by default)", settingSource)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		add("clients.maestro.auth.tls_config: cert_file and key_file go together: set both for mutual TLS, or neither")
	}
	if !c.Insecure && c.CAFile == "" && (c.CertFile != "" || c.TokenFile != "") {
		add("clients.maestro.auth.tls_config.ca_file (HYPERFLEET_MAESTRO_CA_FILE) is needed with a client certificate or token: it verifies the Maestro server")
	}
	if !c.Insecure && c.CAFile == "" && c.GRPCAddress != "" {
		add("the gRPC connection to %s has no TLS settings: set clients.maestro.auth.tls_config.ca_file (HYPERFLEET_MAESTRO_CA_FILE), or clients.maestro.insecure: true for a local plaintext server", c.GRPCAddress)
	}
	for name, d := range map[string]time.Duration{
		"timeout": c.Timeout, "server_healthiness_timeout": c.ServerHealthinessTimeout,
		"keepalive.time": c.KeepaliveTime, "keepalive.timeout": c.KeepaliveTimeout,
	} {
		if d < 0 {
			add("clients.maestro.%s must not be negative", name)
		}
	}
	return errors.Join(errs...)
}

// key identifies a connection: adapters with the same settings share one.
func (c Config) key() string {
	return strings.Join([]string{c.GRPCAddress, c.HTTPAddress, c.SourceID, fmt.Sprint(c.Insecure),
		c.CAFile, c.CertFile, c.KeyFile, c.TokenFile, c.HTTPCAFile, c.ServerName,
		c.Timeout.String(), c.ServerHealthinessTimeout.String(), c.KeepaliveTime.String(), c.KeepaliveTimeout.String()}, "\x00")
}

// Overrides replace settings of an adapter's clients.maestro block: the
// worker's --maestro-* flags and HYPERFLEET_MAESTRO_* variables. Empty
// fields keep the file's value.
type Overrides struct {
	GRPCAddress, HTTPAddress, SourceID                           string
	CAFile, CertFile, KeyFile, TokenFile, HTTPCAFile, ServerName string
	Insecure                                                     *bool
	Timeout, ServerHealthinessTimeout                            time.Duration
}

// Apply returns c with the overrides that are set.
func (o Overrides) Apply(c Config) Config {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.GRPCAddress, o.GRPCAddress)
	set(&c.HTTPAddress, o.HTTPAddress)
	set(&c.SourceID, o.SourceID)
	set(&c.CAFile, o.CAFile)
	set(&c.CertFile, o.CertFile)
	set(&c.KeyFile, o.KeyFile)
	set(&c.TokenFile, o.TokenFile)
	set(&c.HTTPCAFile, o.HTTPCAFile)
	set(&c.ServerName, o.ServerName)
	if o.Insecure != nil {
		c.Insecure = *o.Insecure
	}
	if o.Timeout > 0 {
		c.Timeout = o.Timeout
	}
	if o.ServerHealthinessTimeout > 0 {
		c.ServerHealthinessTimeout = o.ServerHealthinessTimeout
	}
	return c
}

// IsZero reports whether no override is set.
func (o Overrides) IsZero() bool { return o == Overrides{} }
