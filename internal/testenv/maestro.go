package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/hyperfleet/hyperfleet/internal/loopback"
)

// Maestro is a real Maestro server on loopback (`maestro server` built into
// bin/ by `make test-tools`): a PostgreSQL database of its own, its REST
// API, its source-facing gRPC server and its built-in gRPC broker for
// agents (no MQTT). Agents are real `maestro agent` processes applying
// ManifestWorks to the shared kube-apiserver.
type Maestro struct {
	// HTTPURL is the REST API (http://127.0.0.1:port).
	HTTPURL string
	// GRPCAddr is where sources (adapters) publish ManifestWorks.
	GRPCAddr string
	// BrokerAddr is where agents connect.
	BrokerAddr string
	// DatabaseURL is the server's own PostgreSQL database (tests read its
	// event log).
	DatabaseURL string

	bin, dir string
	args     []string
	dropDB   func()

	mu     sync.Mutex
	server *proc
	agents []*proc
	// agentOf is the agent serving each consumer: one at a time, since two
	// agents of one consumer would both apply, and race each other's
	// deletions of, every work.
	agentOf map[string]*proc
}

// proc is a child process and the end of its Wait.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	maestroOnce   sync.Once
	maestroShared *Maestro
	maestroErr    error
	maestroAll    []*Maestro
	maestroAllMu  sync.Mutex
)

// MaestroServer returns the process-wide Maestro server, starting it on
// first use. Tests share it: every adapter publishes under its own source
// id, and consumers are registered once (RegisterConsumer is idempotent).
func MaestroServer(t testing.TB) *Maestro {
	t.Helper()
	m, err := StartMaestro()
	if err != nil {
		t.Fatalf("a Maestro server is needed for this test: %v", err)
	}
	return m
}

// StartMaestro starts the process-wide Maestro server outside a test (load
// drivers); StopAll stops it.
func StartMaestro() (*Maestro, error) {
	maestroOnce.Do(func() { maestroShared, maestroErr = startMaestro() })
	return maestroShared, maestroErr
}

// NewMaestro starts a Maestro server of the test's own (one it may stop and
// restart); it is stopped when the test ends.
func NewMaestro(t testing.TB) *Maestro {
	t.Helper()
	m, err := startMaestro()
	if err != nil {
		t.Fatalf("a Maestro server is needed for this test: %v", err)
	}
	t.Cleanup(m.shutdown)
	return m
}

func startMaestro() (*Maestro, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(bin, "maestro")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("maestro not found in %s: run `make test-tools` (builds the Maestro server and agent from its Go module into bin/, about 20 minutes cold) or set %s", bin, BinDirEnv)
	}
	dbURL, drop, err := NewPostgresDatabase()
	if err != nil {
		return nil, fmt.Errorf("database for Maestro: %w", err)
	}
	dir, err := os.MkdirTemp("", "hyperfleet-maestro-")
	if err != nil {
		drop()
		return nil, err
	}
	m := &Maestro{bin: path, dir: dir, dropDB: drop, DatabaseURL: dbURL}
	fail := func(err error) (*Maestro, error) {
		m.shutdown()
		return nil, err
	}
	// Maestro reads its database settings from files, one value each.
	host, port, user, name, err := splitPostgresURL(dbURL)
	if err != nil {
		return fail(err)
	}
	dbFlags := []string{"--db-sslmode=disable"}
	for _, f := range []struct{ flag, value string }{
		{"db-host-file", host}, {"db-port-file", port}, {"db-user-file", user}, {"db-password-file", ""}, {"db-name-file", name},
	} {
		file := filepath.Join(dir, f.flag)
		if err := os.WriteFile(file, []byte(f.value), 0o600); err != nil {
			return fail(err)
		}
		dbFlags = append(dbFlags, "--"+f.flag+"="+file)
	}
	out, err := exec.Command(path, append([]string{"migration"}, dbFlags...)...).CombinedOutput()
	if err != nil {
		return fail(fmt.Errorf("maestro migration: %v\n%s", err, out))
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = loopback.Port(); err != nil {
			return fail(err)
		}
	}
	m.HTTPURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	m.GRPCAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
	m.BrokerAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
	brokerCfg := filepath.Join(dir, "broker.yaml")
	if err := os.WriteFile(brokerCfg, []byte("url: "+m.BrokerAddr+"\n"), 0o600); err != nil {
		return fail(err)
	}
	m.args = append([]string{"server",
		"--server-hostname=127.0.0.1",
		"--http-server-bindport=" + strconv.Itoa(ports[0]),
		"--grpc-server-bindport=" + strconv.Itoa(ports[1]),
		"--grpc-broker-bindport=" + strconv.Itoa(ports[2]),
		"--health-check-server-bindport=" + strconv.Itoa(ports[3]),
		"--metrics-server-bindport=" + strconv.Itoa(ports[4]),
		"--message-broker-type=grpc", "--message-broker-config-file=" + brokerCfg,
		"--enable-https=false", "--enable-health-check-https=false", "--enable-metrics-https=false",
		"-v=2",
	}, dbFlags...)
	if err := m.Start(); err != nil {
		return fail(err)
	}
	maestroAllMu.Lock()
	maestroAll = append(maestroAll, m)
	maestroAllMu.Unlock()
	return m, nil
}

// Start (re)starts the server on its ports and database and waits until
// its REST API answers.
func (m *Maestro) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.server != nil {
		return nil
	}
	cmd, err := m.spawn("maestro-server", nil, m.args...)
	if err != nil {
		return err
	}
	m.server = cmd
	// Ready is the REST API answering and the gRPC source and broker
	// ports accepting: clients and agents use all three at once.
	deadline := time.Now().Add(startLimit)
	for {
		if m.serving() {
			return nil
		}
		select {
		case <-cmd.done:
			m.server = nil
			return fmt.Errorf("maestro server exited while starting (log: %s)", filepath.Join(m.dir, "maestro-server.log"))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("maestro server not ready within %s (log: %s)", startLimit, filepath.Join(m.dir, "maestro-server.log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serving reports whether the server's REST API answers and its gRPC
// ports accept connections.
func (m *Maestro) serving() bool {
	resp, err := http.Get(m.HTTPURL + "/api/maestro/v1/consumers")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	for _, addr := range []string{m.GRPCAddr, m.BrokerAddr} {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		conn.Close()
	}
	return true
}

// Stop kills the server (its agents keep running and reconnect when it is
// started again).
func (m *Maestro) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.server != nil {
		stopProcess(m.server)
		m.server = nil
	}
}

// RegisterConsumer registers a consumer (a target cluster) through the REST
// API; an existing one is fine.
func (m *Maestro) RegisterConsumer(t testing.TB, name string) {
	t.Helper()
	if err := m.Register(name); err != nil {
		t.Fatal(err)
	}
}

// Register is RegisterConsumer outside a test (load drivers).
func (m *Maestro) Register(name string) error {
	body, _ := json.Marshal(map[string]string{"name": name})
	resp, err := http.Post(m.HTTPURL+"/api/maestro/v1/consumers", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("register Maestro consumer %s: %w", name, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict && !strings.Contains(string(out), "already exists") {
		return fmt.Errorf("register Maestro consumer %s: HTTP %d: %s", name, resp.StatusCode, out)
	}
	return nil
}

// ResourceBundles lists the REST API's resource bundles (ManifestWorks as
// Maestro stores them) matching a search, e.g. "source='cl-maestro'".
func (m *Maestro) ResourceBundles(t testing.TB, search string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, m.HTTPURL+"/api/maestro/v1/resource-bundles", nil)
	q := req.URL.Query()
	q.Set("search", search)
	q.Set("size", "1000")
	req.URL.RawQuery = q.Encode()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("list Maestro resource bundles: %v", err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &list) != nil {
		t.Fatalf("list Maestro resource bundles (%s): HTTP %d: %s", search, resp.StatusCode, out)
	}
	return list.Items
}

// MaestroAgentFlags are the flags a real `maestro agent` needs here besides
// the binary: the consumer it serves, the broker of the server, the cluster
// it applies to (kubeconfig), a free port for its own HTTPS endpoint and a
// short status sync so feedback arrives within a second. Documented in
// the operator guide ("Running Maestro locally").
func MaestroAgentFlags(consumer, brokerConfig, kubeconfig string, listenPort int) []string {
	return []string{"agent",
		"--consumer-name=" + consumer,
		"--workload-source-driver=grpc",
		"--workload-source-config=" + brokerConfig,
		"--cloudevents-client-id=" + consumer + "-agent",
		"--kubeconfig=" + kubeconfig,
		"--namespace=default",
		"--listen=127.0.0.1:" + strconv.Itoa(listenPort),
		"--status-sync-interval=1s",
		"-v=2",
	}
}

// StartAgent runs a real `maestro agent` for the consumer against the
// kube-apiserver, after installing the AppliedManifestWork CRD it records
// applied work in. It stops with the server.
func (m *Maestro) StartAgent(t testing.TB, consumer string, kube *Kube) {
	t.Helper()
	if err := m.Agent(consumer, kube); err != nil {
		t.Fatal(err)
	}
}

// Agent is StartAgent outside a test (load drivers).
func (m *Maestro) Agent(consumer string, kube *Kube) error {
	if err := InstallAppliedManifestWorkCRD(kube); err != nil {
		return err
	}
	port, err := loopback.Port()
	if err != nil {
		return err
	}
	brokerCfg := filepath.Join(m.dir, "broker.yaml")
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.agentOf[consumer]; a != nil {
		select {
		case <-a.done: // it exited: start another
		default:
			return nil
		}
	}
	cmd, err := m.spawn("maestro-agent-"+consumer, []string{"POD_NAME=" + consumer + "-agent"},
		MaestroAgentFlags(consumer, brokerCfg, kube.Kubeconfig, port)...)
	if err != nil {
		return err
	}
	m.agents = append(m.agents, cmd)
	if m.agentOf == nil {
		m.agentOf = map[string]*proc{}
	}
	m.agentOf[consumer] = cmd
	return nil
}

// Log returns the server's log (for failure messages).
func (m *Maestro) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(m.dir, name+".log"))
	return string(b)
}

func (m *Maestro) spawn(name string, env []string, args ...string) (*proc, error) {
	log, err := os.OpenFile(filepath.Join(m.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(m.bin, args...)
	cmd.Env = append(os.Environ(), append([]string{"MAESTRO_ENV=development"}, env...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	return p, nil
}

// shutdown stops the agents and the server and drops the database.
func (m *Maestro) shutdown() {
	m.mu.Lock()
	for _, a := range m.agents {
		stopProcess(a)
	}
	m.agents, m.agentOf = nil, nil
	drop := m.dropDB
	m.dropDB = nil
	m.mu.Unlock()
	m.Stop()
	if drop != nil {
		drop()
		_ = os.RemoveAll(m.dir)
	}
}

// printMaestroLogs writes the last lines of every Maestro server's and
// agent's log.
func printMaestroLogs(w io.Writer, lines int) {
	maestroAllMu.Lock()
	all := append([]*Maestro(nil), maestroAll...)
	maestroAllMu.Unlock()
	for _, m := range all {
		logs, _ := filepath.Glob(filepath.Join(m.dir, "*.log"))
		for _, f := range logs {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "--- last %d lines of %s ---\n%s\n", lines, f, lastLines(b, lines))
		}
	}
}

// lastLines is the tail of b: its last n lines.
func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

func stopMaestro() {
	maestroAllMu.Lock()
	all := maestroAll
	maestroAll = nil
	maestroAllMu.Unlock()
	for _, m := range all {
		m.shutdown()
	}
}

// stopProcess ends a process started by spawn and waits for it.
func stopProcess(p *proc) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// splitPostgresURL reads postgres://user@host:port/name?... .
func splitPostgresURL(u string) (host, port, user, name string, err error) {
	rest, ok := strings.CutPrefix(u, "postgres://")
	if !ok {
		return "", "", "", "", fmt.Errorf("unexpected database URL %q", u)
	}
	rest, _, _ = strings.Cut(rest, "?")
	cred, hostPath, ok := strings.Cut(rest, "@")
	if !ok {
		return "", "", "", "", fmt.Errorf("database URL %q has no user", u)
	}
	user, _, _ = strings.Cut(cred, ":")
	hostPort, name, _ := strings.Cut(hostPath, "/")
	host, port, err = net.SplitHostPort(hostPort)
	return host, port, user, name, err
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallAppliedManifestWorkCRD serves work.open-cluster-management.io/v1
// AppliedManifestWork (cluster-scoped, with a status subresource), where a
// Maestro agent records what it applied; idempotent.
func InstallAppliedManifestWorkCRD(kube *Kube) error {
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "appliedmanifestworks.work.open-cluster-management.io"},
		"spec": map[string]any{
			"group": "work.open-cluster-management.io",
			"names": map[string]any{"kind": "AppliedManifestWork", "listKind": "AppliedManifestWorkList",
				"plural": "appliedmanifestworks", "singular": "appliedmanifestwork"},
			"scope": "Cluster",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("install the AppliedManifestWork CRD: %w", err)
	}
	// Wait until the API server serves the kind and discovery lists it
	// (what a controller manager started next reads).
	disco, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}
	for {
		err := appliedManifestWorksServed(ctx, dyn, disco, gvr)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return errors.Join(errors.New("the AppliedManifestWork CRD is not served after 30s"), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func appliedManifestWorksServed(ctx context.Context, dyn dynamic.Interface, disco discovery.DiscoveryInterface, gvr schema.GroupVersionResource) error {
	if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return err
	}
	list, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return nil
		}
	}
	return fmt.Errorf("discovery of %s does not list %s yet", gvr.GroupVersion(), gvr.Resource)
}
