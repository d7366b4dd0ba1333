// Package embeddedtemporal runs a real Temporal server inside the process,
// persisted in a SQLite file (or in memory for tests), with its namespace
// and HyperFleet's search attributes registered, and optionally the
// Temporal Web UI. `hyperfleet dev` and the tests use it; production points
// at an external Temporal instead.
package embeddedtemporal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"github.com/hyperfleet/hyperfleet/internal/loopback"
)

// Config of an embedded server.
type Config struct {
	// DatabaseFile persists the server's state; empty keeps it in memory.
	DatabaseFile string
	// Namespace to register (default "default").
	Namespace string
	// Port of the frontend on 127.0.0.1 (0: a free one).
	Port int
	// SearchAttributes registered on the namespace.
	SearchAttributes map[string]enumspb.IndexedValueType
	// LogFile receives the server's own logs (empty: discarded).
	LogFile string
}

// Server is a running embedded Temporal.
type Server struct {
	cfg      Config
	srv      temporal.Server
	hostPort string
	stopOnce sync.Once
}

// DynamicConfig makes a one-shard embedded server fast: the defaults add
// 50-100 ms to every workflow task and can stall a long poll for 20 s. It
// also spells out what worker versioning needs (on by default in this
// server version; the reconciler relies on it) and refreshes a version's
// drainage status every 10 s instead of minutes, as topology.DynamicConfig
// does for the production shape.
func DynamicConfig() dynamicconfig.StaticClient {
	v := func(x any) []dynamicconfig.ConstrainedValue { return []dynamicconfig.ConstrainedValue{{Value: x}} }
	return dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key():    v(true),
		dynamicconfig.TransferProcessorMaxPollRPS.Key():                v(10000),
		dynamicconfig.FrontendPersistenceMaxQPS.Key():                  v(10000),
		dynamicconfig.HistoryPersistenceMaxQPS.Key():                   v(45000),
		dynamicconfig.HistoryLongPollExpirationInterval.Key():          v(2 * time.Second),
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():         v(1),
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():        v(1),
		dynamicconfig.EnableDeploymentVersions.Key():                   v(true),
		dynamicconfig.EnableSendTargetVersionChanged.Key():             v(true),
		dynamicconfig.FrontendEnableWorkerVersioningWorkflowAPIs.Key(): v(true),
		dynamicconfig.VersionDrainageStatusRefreshInterval.Key():       v(10 * time.Second),
		dynamicconfig.VersionDrainageStatusVisibilityGracePeriod.Key(): v(10 * time.Second),
	}
}

// Start creates (or opens) the database, registers the namespace and starts
// the frontend, history, matching and worker services on loopback.
func Start(cfg Config) (*Server, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	loopback.Avoid(cfg.Port) // chosen by the caller: not for another service
	ports, err := loopback.Ports(8)
	if err != nil {
		return nil, err
	}
	if cfg.Port == 0 {
		cfg.Port = ports[0]
	} else if err := portFree(cfg.Port); err != nil {
		return nil, fmt.Errorf("temporal frontend port %d: %w (pick another with --temporal-port)", cfg.Port, err)
	}
	sqlCfg, err := openDatabase(cfg, ports[0])
	if err != nil {
		return nil, err
	}
	hostPort := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port))
	srv, err := newServer(serverConfig(cfg, sqlCfg, ports, hostPort), cfg.LogFile)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	s := &Server{cfg: cfg, srv: srv, hostPort: hostPort}
	// A bound for a start that hangs, not the wait itself: generous, as a
	// loaded two-core machine can take many seconds.
	if err := s.waitReady(2 * time.Minute); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// openDatabase readies the server's SQLite database, with its schema and
// the namespace: cfg.DatabaseFile, or an in-memory one named after this
// process and firstPort.
func openDatabase(cfg Config, firstPort int) (*config.SQL, error) {
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if cfg.DatabaseFile == "" {
		sqlCfg.DatabaseName = fmt.Sprintf("hyperfleet-%d-%d", os.Getpid(), firstPort)
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
	} else {
		if err := os.MkdirAll(filepath.Dir(cfg.DatabaseFile), 0o755); err != nil {
			return nil, err
		}
		sqlCfg.DatabaseName = cfg.DatabaseFile
		sqlCfg.ConnectAttributes["mode"] = "rwc"
		// NORMAL sync in WAL mode survives a process crash (not a power
		// loss), enough for a development server. One connection: SQLite
		// has one writer, and several connections measured half as fast
		// (they wait on each other's locks).
		sqlCfg.ConnectAttributes["journal_mode"] = "wal"
		sqlCfg.ConnectAttributes["synchronous"] = "normal"
		sqlCfg.MaxConns, sqlCfg.MaxIdleConns = 1, 1
	}
	// An in-memory database gets its schema from the plugin on connect; a
	// file only when it is new.
	if _, statErr := os.Stat(cfg.DatabaseFile); cfg.DatabaseFile != "" && os.IsNotExist(statErr) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			return nil, fmt.Errorf("temporal schema: %w", err)
		}
	}
	if cfg.DatabaseFile != "" {
		if err := forgetMembers(cfg.DatabaseFile); err != nil {
			return nil, err
		}
	}
	ns, err := sqlite.NewNamespaceConfig("active", cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("temporal namespace %s: %w", cfg.Namespace, err)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, fmt.Errorf("temporal namespace %s: %w", cfg.Namespace, err)
	}
	return sqlCfg, nil
}

// serverConfig is the configuration of a one-shard server on loopback,
// its frontend at hostPort.
func serverConfig(cfg Config, sqlCfg *config.SQL, ports []int, hostPort string) *config.Config {
	// ports: [0] frontend (unless set), [1..3] other services' gRPC,
	// [4..7] membership of each service; then metrics and pprof.
	services := map[string]config.Service{}
	for i, name := range serviceNames {
		grpc := ports[i]
		if name == "frontend" {
			grpc = cfg.Port
		}
		services[name] = config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: ports[4+i], BindOnIP: "127.0.0.1"}}
	}
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"},
			// No metrics and no pprof listener: their ports were random and
			// published nowhere, and recording the server's metrics cost 3%
			// of the process' CPU in a burst of creates. A worker's view of
			// Temporal (schedule-to-start, task latencies) is the SDK's
			// metrics (package temporalmetrics).
		},
		Persistence: config.Persistence{
			DefaultStore: sqliteplugin.PluginName, VisibilityStore: sqliteplugin.PluginName, NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace: false, FailoverVersionIncrement: 10,
			MasterClusterName: "active", CurrentClusterName: "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: hostPort},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: hostPort},
	}
}

// newServer creates the server of serverCfg, logging to logFile (empty:
// nowhere).
func newServer(serverCfg *config.Config, logFile string) (temporal.Server, error) {
	var logger tlog.Logger = tlog.NewNoopLogger()
	if logFile != "" {
		logger = tlog.NewZapLogger(tlog.BuildZapLogger(tlog.Config{Level: "warn", OutputFile: logFile, Format: "json"}))
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&serverCfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&serverCfg.Global.Authorization, logger)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(serverCfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(showFatal(logger)),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(DynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	return srv, nil
}

var serviceNames = []string{"frontend", "history", "matching", "worker"}

// HostPort is the frontend's address.
func (s *Server) HostPort() string { return s.hostPort }

// Namespace is the registered namespace.
func (s *Server) Namespace() string { return s.cfg.Namespace }

// Dial connects a client to the server.
func (s *Server) Dial(opts client.Options) (client.Client, error) {
	opts.HostPort = s.hostPort
	if opts.ConnectionOptions.GrpcCompression == nil {
		// Loopback: gzip would only burn CPU (see temporalclient.Loopback).
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if opts.Namespace == "" {
		opts.Namespace = s.cfg.Namespace
	}
	return client.Dial(opts)
}

// Stop shuts the server down; it is safe to call twice.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { _ = s.srv.Stop() })
}

func (s *Server) waitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		c, err := s.Dial(client.Options{Logger: quietLogger{}})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			if err == nil {
				_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.cfg.Namespace})
			}
			cancel()
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("temporal server not ready after %s: %v", within, last)
}

func portFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return errors.New("already in use")
	}
	return l.Close()
}

// quietLogger silences the SDK while polling for readiness.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// forgetMembers removes the cluster membership a previous run of this
// server left in its database. The server is always alone, but on a restart
// it would otherwise try to join those (dead) members for about a minute
// before serving anything.
func forgetMembers(file string) error {
	if _, err := os.Stat(file); err != nil {
		return nil // a new database has none
	}
	db, err := sql.Open("sqlite", file)
	if err != nil {
		return fmt.Errorf("open temporal database %s: %w", file, err)
	}
	defer db.Close()
	if _, err := db.Exec("DELETE FROM cluster_membership"); err != nil {
		return fmt.Errorf("reset cluster membership in %s: %w (is another server using it?)", file, err)
	}
	return nil
}
