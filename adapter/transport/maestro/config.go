package maestro

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
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

// FromTaskConfig reads an adapter's clients.maestro block (nil: nothing
// set); the source id defaults to the adapter name. Pure.
func FromTaskConfig(mc *taskconfig.MaestroClient, adapterName string) Config {
	c := Config{SourceID: adapterName}
	if mc == nil {
		return c
	}
	c.GRPCAddress, c.HTTPAddress, c.Insecure = mc.GRPCServerAddress, mc.HTTPServerAddress, mc.Insecure
	if mc.SourceID != "" {
		c.SourceID = mc.SourceID
	}
	c.Timeout, c.ServerHealthinessTimeout = mc.Timeout.Duration, mc.ServerHealthinessTimeout.Duration
	if a := mc.Auth; a != nil {
		c.TokenFile = a.TokenFile
		if t := a.TLSConfig; t != nil {
			c.CAFile, c.CertFile, c.KeyFile, c.ServerName, c.HTTPCAFile = t.CAFile, t.CertFile, t.KeyFile, t.ServerName, t.HTTPCAFile
		}
	}
	if k := mc.Keepalive; k != nil {
		c.KeepaliveTime, c.KeepaliveTimeout = k.Time.Duration, k.Timeout.Duration
	}
	return c
}

// EnvPrefix starts the environment variables that override clients.maestro
// (upstream's names): HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS, ...
const EnvPrefix = "HYPERFLEET_MAESTRO_"

// OverridesFromEnv reads the HYPERFLEET_MAESTRO_* variables through lookup
// (os.LookupEnv in a worker). A malformed boolean or duration is an error
// naming the variable.
func OverridesFromEnv(lookup func(string) (string, bool)) (Overrides, error) {
	var o Overrides
	get := func(name string) string {
		v, _ := lookup(EnvPrefix + name)
		return strings.TrimSpace(v)
	}
	for name, dst := range map[string]*string{
		"GRPC_SERVER_ADDRESS": &o.GRPCAddress, "HTTP_SERVER_ADDRESS": &o.HTTPAddress, "SOURCE_ID": &o.SourceID,
		"CA_FILE": &o.CAFile, "CERT_FILE": &o.CertFile, "KEY_FILE": &o.KeyFile, "TOKEN_FILE": &o.TokenFile,
		"HTTP_CA_FILE": &o.HTTPCAFile, "SERVER_NAME": &o.ServerName,
	} {
		*dst = get(name)
	}
	var errs []error
	if v := get("INSECURE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%sINSECURE=%q is not a boolean: write true or false", EnvPrefix, v))
		} else {
			o.Insecure = &b
		}
	}
	for name, dst := range map[string]*time.Duration{"TIMEOUT": &o.Timeout, "SERVER_HEALTHINESS_TIMEOUT": &o.ServerHealthinessTimeout} {
		if v := get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s%s=%q is not a positive duration: write e.g. 10s", EnvPrefix, name, v))
				continue
			}
			*dst = d
		}
	}
	return o, errors.Join(errs...)
}
