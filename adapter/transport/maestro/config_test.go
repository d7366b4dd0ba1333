package maestro

import (
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
)

func TestFromTaskConfig(t *testing.T) {
	full := &taskconfig.MaestroClient{
		GRPCServerAddress: "grpc:8090", HTTPServerAddress: "https://api:8000", SourceID: "src", ClientID: "ignored",
		Timeout: taskconfig.Duration{Duration: 3 * time.Second}, ServerHealthinessTimeout: taskconfig.Duration{Duration: time.Minute},
		Auth: &taskconfig.MaestroAuth{Type: "tls", TokenFile: "/tok", TLSConfig: &taskconfig.MaestroTLS{
			CAFile: "/ca", CertFile: "/crt", KeyFile: "/key", ServerName: "sn", HTTPCAFile: "/hca"}},
		Keepalive: &taskconfig.MaestroKeepalive{Time: taskconfig.Duration{Duration: 30 * time.Second}, Timeout: taskconfig.Duration{Duration: 5 * time.Second}},
	}
	for _, c := range []struct {
		name string
		in   *taskconfig.MaestroClient
		want Config
	}{
		{"absent block: source id is the adapter name", nil, Config{SourceID: "adapter"}},
		{"source id defaults to the adapter name", &taskconfig.MaestroClient{GRPCServerAddress: "g:1", Insecure: true}, Config{GRPCAddress: "g:1", SourceID: "adapter", Insecure: true}},
		{"every field", full, Config{GRPCAddress: "grpc:8090", HTTPAddress: "https://api:8000", SourceID: "src",
			CAFile: "/ca", CertFile: "/crt", KeyFile: "/key", TokenFile: "/tok", HTTPCAFile: "/hca", ServerName: "sn",
			Timeout: 3 * time.Second, ServerHealthinessTimeout: time.Minute, KeepaliveTime: 30 * time.Second, KeepaliveTimeout: 5 * time.Second}},
	} {
		if got := FromTaskConfig(c.in, "adapter"); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestOverridesFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	yes := true
	for _, c := range []struct {
		name    string
		lookup  func(string) (string, bool)
		want    Overrides
		wantErr []string
	}{
		{"nothing set", env(), Overrides{}, nil},
		{"addresses, insecure, timeout", env("HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS", " 127.0.0.1:1 ", "HYPERFLEET_MAESTRO_HTTP_SERVER_ADDRESS", "http://x:2",
			"HYPERFLEET_MAESTRO_INSECURE", "true", "HYPERFLEET_MAESTRO_TIMEOUT", "4s", "HYPERFLEET_MAESTRO_CA_FILE", "/ca"),
			Overrides{GRPCAddress: "127.0.0.1:1", HTTPAddress: "http://x:2", Insecure: &yes, Timeout: 4 * time.Second, CAFile: "/ca"}, nil},
		{"malformed values name the variable", env("HYPERFLEET_MAESTRO_INSECURE", "maybe", "HYPERFLEET_MAESTRO_SERVER_HEALTHINESS_TIMEOUT", "-1s"),
			Overrides{}, []string{"HYPERFLEET_MAESTRO_INSECURE=\"maybe\" is not a boolean", "HYPERFLEET_MAESTRO_SERVER_HEALTHINESS_TIMEOUT=\"-1s\" is not a positive duration"}},
	} {
		got, err := OverridesFromEnv(c.lookup)
		if len(c.wantErr) > 0 {
			for _, w := range c.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %v does not say %q", c.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if (got.Insecure == nil) != (c.want.Insecure == nil) || got.Insecure != nil && *got.Insecure != *c.want.Insecure {
			t.Errorf("%s: insecure %v, want %v", c.name, got.Insecure, c.want.Insecure)
		}
		got.Insecure, c.want.Insecure = nil, nil
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// The settings of a file, overridden, and validated: a missing or
// malformed setting names the field and the variable.
func TestValidateNamesTheSetting(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, []string{"grpc_server_address (HYPERFLEET_MAESTRO_GRPC_SERVER_ADDRESS", "http_server_address (HYPERFLEET_MAESTRO_HTTP_SERVER_ADDRESS", "source_id"}},
		{"scheme on the gRPC address", Config{GRPCAddress: "grpc://h:1", HTTPAddress: "http://h:2", SourceID: "s", Insecure: true}, []string{"is not host:port"}},
		{"plain http without insecure", Config{GRPCAddress: "h:1", HTTPAddress: "http://h:2", SourceID: "s", CAFile: "/ca"}, []string{"is plain http"}},
		{"no TLS without insecure", Config{GRPCAddress: "h:1", HTTPAddress: "https://h:2", SourceID: "s"}, []string{"has no TLS settings"}},
		{"cert without key", Config{GRPCAddress: "h:1", HTTPAddress: "https://h:2", SourceID: "s", CAFile: "/ca", CertFile: "/c"}, []string{"cert_file and key_file go together"}},
		{"local plaintext", Config{GRPCAddress: "h:1", HTTPAddress: "http://h:2", SourceID: "s", Insecure: true}, nil},
	} {
		err := c.cfg.WithDefaults().Validate()
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v does not say %q", c.name, err, w)
			}
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want failure
	}{
		{`insert or update on table "resources" violates foreign key constraint "fk_resources_consumers"`, failureUnregistered},
		{`consumer "x" not found`, failureUnregistered},
		{"rpc error: code = Unavailable desc = connection error: dial tcp 127.0.0.1:1: connect: connection refused", failureUnreachable},
		{`Get "http://127.0.0.1:2/api": context deadline exceeded (Client.Timeout exceeded)`, failureUnreachable},
		{"tls: failed to verify certificate: x509: certificate signed by unknown authority", failureUnreachable},
		{`ManifestWork.work.open-cluster-management.io "x" is invalid: spec.workload: Required value`, failureRejected},
		{"something else", failureOther},
	} {
		if got := classify(c.msg); got != c.want {
			t.Errorf("classify(%q) = %d, want %d", c.msg, got, c.want)
		}
	}
}
