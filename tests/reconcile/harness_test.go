//go:build integration

// Package reconcile tests the whole system end to end through HTTP: the API
// on real PostgreSQL, its outbox relay, the reconcile workflows on a real
// embedded Temporal server, and the shipped adapters applying to a real
// kube-apiserver. Contract section: "Reconciliation".
package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/assembly"
	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/topology"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The adapters every system here runs: the shipped ones.
var (
	clusterAdapters  = []string{"validation", "landing-zone"}
	nodePoolAdapters = []string{"nodepool-validation", "nodepool-config"}
)

// system is one HyperFleet: API + relay + workers on its own Temporal and
// database, sharing the process-wide kube-apiserver.
type system struct {
	t *testing.T
	// temporalAddr is the frontend; the server runs in this process
	// (temporal) or, when options.temporalProcess, in a child process.
	temporalAddr string
	temporal     *embeddedtemporal.Server
	temporalProc *process
	tc           client.Client
	stack        *assembly.System
	temporalDir  string
	kube         *testenv.Kube
	cs           kubernetes.Interface
	url          string
	dbURL        string
	opts         options
}

type options struct {
	reconcile reconcile.Options
	// temporalProcess runs Temporal as a child process (hyperfleet
	// temporal) persisted in a file, so a test can stop and restart it.
	temporalProcess bool
	// noWorkers leaves the reconciler and adapters to the test.
	noWorkers bool
	// adapters overrides the in-process adapters (directories).
	adapters []string
	// registered overrides which adapters each kind runs.
	registered map[string][]string
	// optional declares adapters each kind runs without waiting for them.
	optional map[string][]string
	// kinds is the API's kinds table; the default kinds when nil.
	kinds *resource.Kinds
}

func defaultOptions() options {
	return options{reconcile: reconcile.Options{
		InitialBackoff:   200 * time.Millisecond,
		MaxBackoff:       2 * time.Second,
		StabilityWindow:  time.Hour,
		HeartbeatTimeout: 5 * time.Second,
	}}
}

func newSystem(t *testing.T, opts options) *system {
	t.Helper()
	kube := testenv.KubeAPI(t)
	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	s := &system{t: t, kube: kube, cs: cs, opts: opts, dbURL: testenv.PostgresDB(t)}
	if opts.temporalProcess {
		s.temporalAddr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		s.temporalDir = t.TempDir()
	}
	t.Cleanup(s.stopTemporal) // first: a start that fails is stopped too
	s.startTemporal()

	registered := opts.registered
	if registered == nil {
		registered = map[string][]string{resource.KindCluster: clusterAdapters, resource.KindNodePool: nodePoolAdapters}
	}
	dirs := opts.adapters
	if dirs == nil {
		for _, names := range [][]string{registered[resource.KindCluster], registered[resource.KindNodePool]} {
			for _, n := range names {
				dirs = append(dirs, shipped(n))
			}
		}
	}
	var files []worker.AdapterFiles
	for _, d := range dirs {
		files = append(files, worker.AdapterFiles{Config: filepath.Join(d, "adapter-config.yaml"), TaskConfig: filepath.Join(d, "adapter-task-config.yaml")})
	}
	st, err := assembly.Start(context.Background(), assembly.Config{
		API: apiserver.Options{
			Server:     apiserver.Config{Listen: "127.0.0.1:0"},
			Store:      store.Config{Driver: store.BackendPostgres, URL: s.dbURL},
			Registered: registered,
			Optional:   opts.optional,
			Kinds:      opts.kinds,
			Logger:     testLogger(t),
		},
		Temporal: s.tc, Namespace: "default",
		Reconcile: opts.reconcile,
		Adapters:  files,
		AdapterDeps: worker.AdapterDeps{
			Kube: func() (*rest.Config, error) { return kube.Config, nil },
		},
		NoWorkers: opts.noWorkers,
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stack stopped with: %v", err)
		}
	})
	s.stack, s.url = st, st.URL
	return s
}

// startReconciler hosts the reconcile workflow in this process, for tests
// that run the adapters in worker processes of their own (noWorkers).
func (s *system) startReconciler() {
	s.t.Helper()
	api, err := apiclient.New(apiclient.Config{AdapterName: "reconciler", BaseURL: s.url})
	if err != nil {
		s.t.Fatal(err)
	}
	host, err := worker.Start(worker.Config{Client: s.tc, Reconciler: true, API: api})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(host.Stop)
}

// startTemporal starts (or restarts) the system's Temporal server.
func (s *system) startTemporal() {
	s.t.Helper()
	if s.opts.temporalProcess {
		// Stopped by stopTemporal, which runs after the stack has stopped.
		s.temporalProc = launchProcess(s.t, "temporal", []string{"temporal", "--state-dir", s.temporalDir,
			"--port", strings.TrimPrefix(s.temporalAddr, "127.0.0.1:"), "--ui-port", "0", "--log-format", "json"})
	} else {
		srv, err := embeddedtemporal.Start(embeddedtemporal.Config{SearchAttributes: reconcile.SearchAttributes()})
		if err != nil {
			s.t.Fatalf("embedded Temporal server: %v", err)
		}
		s.temporal, s.temporalAddr = srv, srv.HostPort()
	}
	if s.tc == nil {
		tc, err := client.NewLazyClient(client.Options{HostPort: s.temporalAddr, Namespace: "default", Logger: quietSDK{}})
		if err != nil {
			s.t.Fatal(err)
		}
		s.tc = tc
		s.t.Cleanup(tc.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if p := s.temporalProc; p != nil {
		go func() { // a process that exits will not become reachable: stop waiting
			select {
			case <-p.exited:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if err := temporalclient.WaitReachable(ctx, s.tc, 60*time.Second); err != nil {
		if p := s.temporalProc; p != nil {
			state := fmt.Sprintf("is still running (pid %d)", p.cmd.Process.Pid)
			select {
			case <-p.exited: // its standard output follows in the test log
				state = fmt.Sprintf("exited: %v", p.exitErr)
			default:
			}
			log := topology.Tail(filepath.Join(s.temporalDir, "temporal.log"), 30)
			if log == "" {
				log = "(empty or missing)"
			}
			s.t.Fatalf("%v: the Temporal process %s; the end of the server's log:\n%s", err, state, log)
		}
		s.t.Fatal(err)
	}
}

// stopTemporal stops the server (a child process is killed outright).
func (s *system) stopTemporal() {
	if s.temporalProc != nil {
		s.temporalProc.stop()
		s.temporalProc = nil
	}
	if s.temporal != nil {
		s.temporal.Stop()
		s.temporal = nil
	}
}

func shipped(name string) string { return filepath.Join("..", "..", "taskconfigs", name) }

// testLogger writes warnings and errors to the test log only when
// HYPERFLEET_TEST_LOG is set (debug for everything).
func testLogger(t *testing.T) zerolog.Logger {
	switch os.Getenv("HYPERFLEET_TEST_LOG") {
	case "":
		return zerolog.Nop()
	case "debug":
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	default:
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Timestamp().Logger()
	}
}

type quietSDK struct{}

func (quietSDK) Debug(string, ...any) {}
func (quietSDK) Info(string, ...any)  {}
func (quietSDK) Warn(string, ...any)  {}
func (quietSDK) Error(string, ...any) {}
