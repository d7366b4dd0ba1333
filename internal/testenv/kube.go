package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hyperfleet/hyperfleet/internal/loopback"
)

// BinDirEnv overrides where the control-plane binaries are found (default:
// bin/ at the repository root, built by `make test-tools`).
const BinDirEnv = "HYPERFLEET_TEST_BIN_DIR"

// Kube is a real control plane on loopback: etcd, kube-apiserver and
// kube-controller-manager with the controllers the adapters' objects need
// (namespace finalization, garbage collection, service accounts, Job,
// Deployment and ReplicaSet). There are no nodes and no kubelet: pods stay
// Pending unless a test runs the pod stand-in (StartPodStandIn), or ends a
// Job's pods itself (CompleteJob).
type Kube struct {
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config is the admin client configuration.
	Config *rest.Config
	dir    string
	procs  []*kubeProc
}

// kubeProc is one process of the control plane; done closes when it exits.
type kubeProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	kubeOnce   sync.Once
	kubeServer *Kube
	kubeErr    error
)

// StartKube starts the shared control plane outside a test (load drivers);
// StopAll stops it.
func StartKube() (*Kube, error) {
	kubeOnce.Do(func() { kubeServer, kubeErr = startKube() })
	return kubeServer, kubeErr
}

// KubeAPI returns the shared control plane, starting it on first use. Tests
// share it; give every object a unique name (cluster ids are UUIDs).
func KubeAPI(t testing.TB) *Kube {
	t.Helper()
	kubeOnce.Do(func() { kubeServer, kubeErr = startKube() })
	if kubeErr != nil {
		t.Fatalf("a kube-apiserver is needed for this test: %v", kubeErr)
	}
	return kubeServer
}

// stopKube stops the control plane started by this process, if any.
func stopKube() {
	if kubeServer == nil {
		return
	}
	for i := len(kubeServer.procs) - 1; i >= 0; i-- {
		p := kubeServer.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	_ = os.RemoveAll(kubeServer.dir)
}

// BinDir finds the directory of the test tools.
func BinDir() (string, error) {
	if d := os.Getenv(BinDirEnv); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "tools")); err == nil {
				return filepath.Join(dir, "bin"), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found (no go.mod with tools/ above the working directory)")
		}
		dir = parent
	}
}

func tool(bin, name string) (string, error) {
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make test-tools` (builds kube-apiserver, kube-controller-manager and etcd from Go modules into bin/, about 15 minutes cold) or set %s", name, bin, BinDirEnv)
	}
	return p, nil
}

func startKube() (*Kube, error) {
	etcd, apiserver, kcm, err := kubeTools()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hyperfleet-kube-")
	if err != nil {
		return nil, err
	}
	k := &Kube{dir: dir}
	fail := func(err error) (*Kube, error) {
		kubeServer = k
		stopKube()
		kubeServer = nil
		return nil, err
	}
	etcdURL, err := k.startEtcd(etcd)
	if err != nil {
		return fail(err)
	}
	creds, err := writeKubeCredentials(dir)
	if err != nil {
		return fail(err)
	}
	server, err := k.startAPIServer(apiserver, etcdURL, creds)
	if err != nil {
		return fail(err)
	}
	if err := k.writeKubeconfig(server, creds.token); err != nil {
		return fail(err)
	}
	// Before the controller manager starts: its garbage collector reads
	// discovery at start and then only every 30 s, and an object whose
	// owner's kind it does not know yet is retried with a doubling backoff.
	// Installed later, a Maestro agent's objects (owned by their
	// AppliedManifestWork) outlived their work by 20-80 s.
	if err := InstallAppliedManifestWorkCRD(k); err != nil {
		return fail(err)
	}
	if err := k.startControllerManager(kcm, creds.saKey); err != nil {
		return fail(err)
	}
	if err := k.awaitControllers(); err != nil {
		return fail(err)
	}
	return k, nil
}

// awaitControllers waits until the service account default/default
// exists. The kube-apiserver creates namespace default only after it first
// reports ready, and the controller manager's serviceaccount controller
// creates the account only once its informers have synced: so the
// namespace tests write into exists, and the controllers (Job, namespace,
// garbage collection) are running, before any test uses them.
func (k *Kube) awaitControllers() error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(startLimit)
	for {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(context.Background(), "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if p := k.exited(); p != nil {
			return fmt.Errorf("%s exited while the control plane started (log: %s)", p.name, filepath.Join(k.dir, p.name+".log"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service account default/default not created within %s (is kube-controller-manager running? log: %s): %w",
				startLimit, filepath.Join(k.dir, "kube-controller-manager.log"), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startLimit bounds how long a control-plane process may take to become
// ready. It is not what the start waits for (readiness is, and an exited
// process ends the wait at once): it only ends a start that hangs, and is
// generous because two test packages may start control planes at once on
// two cores.
const startLimit = 3 * time.Minute

// exited returns a process of the control plane that has exited, if any.
func (k *Kube) exited() *kubeProc {
	for _, p := range k.procs {
		select {
		case <-p.done:
			return p
		default:
		}
	}
	return nil
}

// kubeTools finds the control plane's binaries in BinDir.
func kubeTools() (etcd, apiserver, kcm string, err error) {
	bin, err := BinDir()
	if err != nil {
		return "", "", "", err
	}
	if etcd, err = tool(bin, "etcd"); err != nil {
		return "", "", "", err
	}
	if apiserver, err = tool(bin, "kube-apiserver"); err != nil {
		return "", "", "", err
	}
	if kcm, err = tool(bin, "kube-controller-manager"); err != nil {
		return "", "", "", err
	}
	return etcd, apiserver, kcm, nil
}

// startEtcd starts a one-member etcd without fsync and returns its client
// URL.
func (k *Kube) startEtcd(path string) (string, error) {
	clientPort, _ := loopback.Port()
	peerPort, _ := loopback.Port()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	if err := k.start("etcd", path, "--data-dir", filepath.Join(k.dir, "etcd"), "--name", "test",
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-cluster", fmt.Sprintf("test=http://127.0.0.1:%d", peerPort),
		"--unsafe-no-fsync", "--log-level", "error"); err != nil {
		return "", err
	}
	return etcdURL, nil
}

// kubeCredentials are the files of the service-account key pair, and the
// admin's bearer token with the token file that grants it.
type kubeCredentials struct {
	saKey, saPub, tokens string
	token                string
}

// writeKubeCredentials makes a service-account key pair and an admin token
// under dir.
func writeKubeCredentials(dir string) (kubeCredentials, error) {
	c := kubeCredentials{saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"), tokens: filepath.Join(dir, "tokens.csv")}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err := os.WriteFile(c.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return c, err
	}
	if err := os.WriteFile(c.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return c, err
	}
	tokenBytes := make([]byte, 16)
	_, _ = rand.Read(tokenBytes)
	c.token = hex.EncodeToString(tokenBytes)
	if err := os.WriteFile(c.tokens, []byte(c.token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return c, err
	}
	return c, nil
}

// startAPIServer starts kube-apiserver on etcdURL, waits until it is ready
// and returns its URL.
func (k *Kube) startAPIServer(path, etcdURL string, creds kubeCredentials) (string, error) {
	port, _ := loopback.Port()
	if err := k.start("kube-apiserver", path,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--cert-dir", filepath.Join(k.dir, "certs"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", creds.saPub, "--service-account-signing-key-file", creds.saKey,
		"--token-auth-file", creds.tokens, "--authorization-mode", "RBAC",
		"--endpoint-reconciler-type", "none", "--enable-priority-and-fairness=false",
		"--disable-admission-plugins", "ServiceAccount",
		"--v", "0"); err != nil {
		return "", err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	if err := k.waitHealthy(server+"/readyz", creds.token); err != nil {
		return "", fmt.Errorf("kube-apiserver: %w (log: %s)", err, filepath.Join(k.dir, "kube-apiserver.log"))
	}
	return server, nil
}

// writeKubeconfig writes the admin's kubeconfig of server and sets
// k.Kubeconfig and k.Config from it.
func (k *Kube) writeKubeconfig(server, token string) error {
	k.Kubeconfig = filepath.Join(k.dir, "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, server, token)
	if err := os.WriteFile(k.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	k.Config = cfg
	return nil
}

// startControllerManager starts the controllers the tests rely on:
// namespaces, garbage collection, service accounts, jobs and deployments.
func (k *Kube) startControllerManager(path, saKey string) error {
	kcmPort, _ := loopback.Port()
	return k.start("kube-controller-manager", path,
		"--kubeconfig", k.Kubeconfig, "--leader-elect=false",
		"--controllers", "namespace-controller,garbage-collector-controller,serviceaccount-controller,"+
			"job-controller,deployment-controller,replicaset-controller",
		"--service-account-private-key-file", saKey, "--use-service-account-credentials=false",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--concurrent-namespace-syncs", "5", "--concurrent-job-syncs", "20",
		"--concurrent-deployment-syncs", "20", "--concurrent-replicaset-syncs", "20",
		"--kube-api-qps", "500", "--kube-api-burst", "1000", "--v", "0")
}

// start launches a process logging to <dir>/<name>.log; it dies with us.
func (k *Kube) start(name, path string, args ...string) error {
	log, err := os.Create(filepath.Join(k.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &kubeProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	k.procs = append(k.procs, p)
	return nil
}

// waitHealthy waits until url answers 200, ending early when a process of
// the control plane exits.
func (k *Kube) waitHealthy(url, token string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback test server with a self-signed certificate
	deadline := time.Now().Add(startLimit)
	var last error
	for time.Now().Before(deadline) {
		if p := k.exited(); p != nil {
			return fmt.Errorf("%s exited (%v)", p.name, p.cmd.ProcessState)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %v", startLimit, last)
}
