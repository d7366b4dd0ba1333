package topology

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"text/template"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
	"github.com/hyperfleet/hyperfleet/worker"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TemporalServices are Temporal's four services, each its own process
// (temporal-<service>), as production runs them.
var TemporalServices = []string{"history", "matching", "frontend", "worker"}

// temporalPorts are a service's ports on 127.0.0.1.
type temporalPorts struct {
	GRPC, Membership, Metrics int
}

// temporalConfig is what the services' configuration files say.
type temporalConfig struct {
	Service       string
	Shards        int
	DBPort        int
	DBPassword    string
	Database      string
	Visibility    string
	Ports         map[string]temporalPorts
	FrontendHTTP  int
	DynamicConfig string
	TLS           TemporalTLS
	ServerName    string
}

// The configuration of one service: the same for all four but for the
// metrics port (each process serves its own /metrics). PostgreSQL through
// the postgres12_pgx plugin (same schema as postgres12): pgx prepares each
// statement once per connection, where lib/pq's plugin has PostgreSQL plan
// every statement again, over two round trips; planning was most of the
// database's time on Temporal's store. Default store and visibility each
// in a database of its own. Every gRPC port requires a client certificate
// from the shape's own CA: the frontend's, and history's and matching's,
// which would otherwise take calls that bypass the frontend.
// Authorization (who may do what once authenticated) is left to the
// operator.
var temporalConfigTemplate = template.Must(template.New("temporal").Parse(`# Written by hyperfleet run-ha for the {{.Service}} service; rewritten at every start.
log:
  stdout: true
  level: warn
  format: json
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: {{.Shards}}
  datastores:
    default:
      sql:
        pluginName: postgres12_pgx
        databaseName: {{.Database}}
        connectAddr: "127.0.0.1:{{.DBPort}}"
        connectProtocol: tcp
        user: postgres
        password: "{{.DBPassword}}"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12_pgx
        databaseName: {{.Visibility}}
        connectAddr: "127.0.0.1:{{.DBPort}}"
        connectProtocol: tcp
        user: postgres
        password: "{{.DBPassword}}"
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
global:
  tls:
    internode:
      server: &server
        certFile: "{{.TLS.ServerCert}}"
        keyFile: "{{.TLS.ServerKey}}"
        requireClientAuth: true
        clientCaFiles: ["{{.TLS.CA}}"]
      client: &client
        serverName: "{{.ServerName}}"
        rootCaFiles: ["{{.TLS.CA}}"]
    frontend:
      server: *server
      client: *client
    systemWorker:
      certFile: "{{.TLS.ServerCert}}"
      keyFile: "{{.TLS.ServerKey}}"
      client: *client
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "127.0.0.1:{{(index .Ports .Service).Metrics}}"
services:
{{- range $name, $p := .Ports}}
  {{$name}}:
    rpc:
      grpcPort: {{$p.GRPC}}
      membershipPort: {{$p.Membership}}
      bindOnIP: "127.0.0.1"
{{- if eq $name "frontend"}}
      httpPort: {{$.FrontendHTTP}}
{{- end}}
{{- end}}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{(index .Ports "frontend").GRPC}}"
dcRedirectionPolicy:
  policy: noop
archival:
  history:
    state: disabled
  visibility:
    state: disabled
namespaceDefaults:
  archival:
    history:
      state: disabled
    visibility:
      state: disabled
publicClient:
  hostPort: "127.0.0.1:{{(index .Ports "frontend").GRPC}}"
dynamicConfigClient:
  filepath: "{{.DynamicConfig}}"
  pollInterval: 10s
`))

// DynamicConfig is the services' dynamic configuration: Temporal's
// defaults, with worker versioning spelled out (this release relies on
// it: deployment versions and the TargetWorkerDeploymentVersionChanged
// notice to pinned workflows) and its drainage status refreshed every 10
// seconds instead of minutes, so `hyperfleet versions` says promptly when
// an old release may stop.
const DynamicConfig = `# Written by hyperfleet run-ha; rewritten at every start.
system.enableDeploymentVersions:
  - value: true
system.enableSendTargetVersionChanged:
  - value: true
frontend.workerVersioningWorkflowAPIs:
  - value: true
matching.wv.VersionDrainageStatusRefreshInterval:
  - value: 10s
matching.wv.VersionDrainageStatusVisibilityGracePeriod:
  - value: 10s
limit.maxIDLength:
  - value: 255
`

// writeTemporalConfigs writes one configuration file a service and the
// dynamic configuration into dir.
func writeTemporalConfigs(dir string, cfg temporalConfig) (map[string]string, error) {
	cfg.ServerName = TemporalServerName
	cfg.DynamicConfig = filepath.Join(dir, "temporal-dynamicconfig.yaml")
	if err := os.WriteFile(cfg.DynamicConfig, []byte(DynamicConfig), 0o644); err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, svc := range TemporalServices {
		cfg.Service = svc
		var b bytes.Buffer
		if err := temporalConfigTemplate.Execute(&b, cfg); err != nil {
			return nil, err
		}
		// 0600: it holds the database password. WriteFile keeps the mode
		// of a file an older release wrote, so set it in any case.
		f := filepath.Join(dir, "temporal-"+svc+".yaml")
		if err := os.WriteFile(f, b.Bytes(), 0o600); err != nil {
			return nil, err
		}
		if err := os.Chmod(f, 0o600); err != nil {
			return nil, err
		}
		files[svc] = f
	}
	return files, nil
}

// setupTemporalSchema creates or upgrades Temporal's two schemas with its
// SQL tool (the schemas are embedded in it): idempotent, so every start
// runs it.
func setupTemporalSchema(ctx context.Context, sqlTool string, dbPort int, dbPassword, logFile string, databases map[string]string) error {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	for _, db := range []string{"temporal", "visibility"} {
		base := []string{"--plugin", "postgres12", "--endpoint", "127.0.0.1", "--port", strconv.Itoa(dbPort),
			"--user", "postgres", "--database", databases[db]}
		for _, step := range [][]string{
			{"setup-schema", "-v", "0.0"}, // creates the version table only when absent
			{"update-schema", "--schema-name", "postgresql/v12/" + db},
		} {
			cmd := exec.CommandContext(ctx, sqlTool, append(append([]string{}, base...), step...)...)
			// The password goes in the environment, not the arguments,
			// which every local account can read.
			cmd.Env = append(os.Environ(), "SQL_PASSWORD="+dbPassword)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			fmt.Fprintf(log, "=== %s %v\n%s", sqlTool, cmd.Args[1:], out.String())
			if err != nil {
				return fmt.Errorf("temporal-sql-tool %s on %s: %w\n%s", step[0], databases[db], err, out.String())
			}
		}
	}
	return nil
}

// registerNamespace creates the namespace when it does not exist yet; the
// frontend may take a moment to serve after it listens.
func registerNamespace(ctx context.Context, c client.Client, name string, retention time.Duration) error {
	for {
		_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: name, WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("register Temporal namespace %s: %w", name, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	// A new namespace reaches every frontend's cache within seconds.
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: name})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s not visible on the Temporal frontend: %w", name, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (t *Topology) startTemporal(ctx context.Context) error {
	cfg := t.cfg
	dbs := map[string]string{"temporal": "temporal", "visibility": "temporal_visibility"}
	if err := setupTemporalSchema(ctx, cfg.TemporalSQLTool, t.pgTemporal.port, t.pgTemporal.password, logPath(cfg.StateDir, "temporal-schema"), dbs); err != nil {
		return err
	}
	t.temporalPorts = map[string]temporalPorts{}
	for _, svc := range TemporalServices {
		var ps temporalPorts
		var err error
		grpc := 0
		if svc == "frontend" {
			grpc = cfg.TemporalPort
			if grpc == 0 {
				grpc = 7233
			}
		}
		if ps.GRPC, err = port(grpc); err != nil {
			return err
		}
		if ps.Membership, err = port(0); err != nil {
			return err
		}
		if ps.Metrics, err = port(0); err != nil {
			return err
		}
		t.temporalPorts[svc] = ps
	}
	httpPort, err := port(0)
	if err != nil {
		return err
	}
	files, err := writeTemporalConfigs(filepath.Join(cfg.StateDir, "config"), temporalConfig{
		Shards: cfg.HistoryShards, DBPort: t.pgTemporal.port, DBPassword: t.pgTemporal.password, Database: dbs["temporal"], Visibility: dbs["visibility"],
		Ports: t.temporalPorts, FrontendHTTP: httpPort, TLS: t.temporalTLS,
	})
	if err != nil {
		return err
	}
	t.temporalAddr = fmt.Sprintf("127.0.0.1:%d", t.temporalPorts["frontend"].GRPC)
	// The first service alone: on a new database each service would write
	// the cluster's metadata, and all but one would fail on the duplicate.
	// Then the other three at once; each joins the membership ring through
	// the database.
	for i, svc := range TemporalServices {
		p := t.add(&Process{
			Name: "temporal-" + svc,
			Argv: []string{cfg.TemporalServer, "--config-file", files[svc], "--allow-no-auth", "start", "--service", svc},
			Dir:  cfg.StateDir, Env: environ(), Log: logPath(cfg.StateDir, "temporal-"+svc),
			Ready: fmt.Sprintf("127.0.0.1:%d", t.temporalPorts[svc].GRPC),
		})
		if err := p.start(); err != nil {
			return err
		}
		if i == 0 {
			if err := t.waitReady(ctx, p, 120*time.Second); err != nil {
				return err
			}
		}
	}
	for _, svc := range TemporalServices[1:] {
		if err := t.waitReady(ctx, t.byKey["temporal-"+svc], 120*time.Second); err != nil {
			return err
		}
	}
	c, err := t.dialTemporal(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := registerNamespace(rctx, c, cfg.Namespace, 72*time.Hour); err != nil {
		return err
	}
	// The relay starts workflows with HyperFleet's search attributes, so
	// they must exist before the first API does.
	return worker.EnsureSearchAttributes(rctx, c, cfg.Namespace)
}

// dialTemporal connects a client to the frontend, waiting for it to
// answer.
func (t *Topology) dialTemporal(ctx context.Context) (client.Client, error) {
	tc, err := tlsfiles.ClientConfig(t.clientTLSFiles())
	if err != nil {
		return nil, fmt.Errorf("the client certificate for Temporal: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := client.Dial(client.Options{HostPort: t.temporalAddr, Namespace: t.cfg.Namespace, Logger: quietSDK{},
			ConnectionOptions: client.ConnectionOptions{TLS: tc}})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to Temporal at %s: %w", t.temporalAddr, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// TemporalAddress is the Temporal frontend's host:port.
func (t *Topology) TemporalAddress() string { return t.temporalAddr }

// TemporalDatabaseURL is Temporal's default store.
func (t *Topology) TemporalDatabaseURL() string { return t.pgTemporal.url("temporal") }

// TemporalServiceAddress is a Temporal service's gRPC host:port (history,
// matching, frontend, worker).
func (t *Topology) TemporalServiceAddress(service string) string {
	return "127.0.0.1:" + strconv.Itoa(t.temporalPorts[service].GRPC)
}

// TemporalMetricsURL is where a Temporal service (history, matching,
// frontend, worker) serves its Prometheus metrics.
func (t *Topology) TemporalMetricsURL(service string) string {
	return "http://127.0.0.1:" + strconv.Itoa(t.temporalPorts[service].Metrics) + "/metrics"
}

// UIURL is the Temporal Web UI's address ("" without one).
func (t *Topology) UIURL() string {
	if t.ui == nil {
		return ""
	}
	return t.ui.URL
}

// Dial connects a Temporal client to the topology's frontend.
func (t *Topology) Dial(ctx context.Context) (client.Client, error) { return t.dialTemporal(ctx) }

// TemporalTLS names the CA and the certificates of the mutual TLS with
// Temporal; a client of the frontend needs the CA and the client pair.
func (t *Topology) TemporalTLS() TemporalTLS { return t.temporalTLS }

// clientTLSFiles are what HyperFleet's own clients of Temporal present.
func (t *Topology) clientTLSFiles() tlsfiles.Files {
	return tlsfiles.Files{CA: t.temporalTLS.CA, Cert: t.temporalTLS.ClientCert, Key: t.temporalTLS.ClientKey}
}

// quietSDK silences the Temporal SDK's own logging while the supervisor
// waits for the frontend.
type quietSDK struct{}

func (quietSDK) Debug(string, ...any) {}

func (quietSDK) Info(string, ...any) {}

func (quietSDK) Warn(string, ...any) {}

func (quietSDK) Error(string, ...any) {}
