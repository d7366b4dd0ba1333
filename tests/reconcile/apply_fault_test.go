//go:build integration

package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Two workers poll the landing-zone queue. The one whose create of the
// cluster's ConfigMap is on the wire is killed (kill -9) and restarted;
// its request reaches the kube-apiserver only after the retried activity
// has finished on a worker, as a request stuck in a dead process's socket
// would. Exactly one create wins (the late one is refused as a duplicate),
// the object carries the right generation, the status is right, and the
// adapter's run completed once.
func TestWorkerKilledDuringApply(t *testing.T) {
	opts := defaultOptions()
	opts.noWorkers = true
	opts.registered = map[string][]string{hf.KindCluster: {"landing-zone"}, hf.KindNodePool: {}}
	s := newSystem(t, opts)
	s.startReconciler()

	// The first ConfigMap create: the landing zone's, inside the cluster's
	// namespace (only this system's workers go through the gate).
	gate := newApplyGate(t, s.kube.Config, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") && strings.HasSuffix(r.URL.Path, "/configmaps")
	})
	workers := make([]*process, 2)
	start := func(i int) {
		workers[i] = startProcess(t, fmt.Sprintf("hyperfleet worker %d", i), []string{"worker", "--log-format", "json",
			"--temporal-address", s.temporalAddr, "--api-base-url", s.url, "--kubeconfig", gate.kubeconfig(t, i),
			"--adapter-dir", shipped("landing-zone"), "--metrics-listen", ""})
	}
	start(0)
	start(1)

	c := s.createCluster("e2e-killed-during-apply", nil)
	var held int
	select {
	case held = <-gate.caught:
	case <-time.After(60 * time.Second):
		t.Fatal("no worker created the cluster's ConfigMap within 60s")
	}
	if err := workers[held].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-workers[held].exited
	start(held)

	// The heartbeat timeout (5s here) hands the run to a live worker.
	got := s.waitReady(c, 1, 90*time.Second)
	zombie := gate.release()
	if zombie != http.StatusConflict {
		t.Errorf("the killed worker's create reached the kube-apiserver with HTTP %d, want 409 (the retry's create already won)", zombie)
	}

	cm, err := s.cs.CoreV1().ConfigMaps(c.ID).Get(context.Background(), "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cluster-info: %v", err)
	}
	if g := cm.Annotations[taskconfig.GenerationAnnotation]; g != "1" {
		t.Errorf("cluster-info generation annotation = %q, want 1", g)
	}
	if cm.Data["cluster_name"] != got.Name {
		t.Errorf("cluster-info data = %v, want cluster_name %s", cm.Data, got.Name)
	}
	st := s.statuses(c)["landing-zone"]
	if st.ObservedGeneration != 1 {
		t.Errorf("landing-zone reported generation %d, want 1", st.ObservedGeneration)
	}
	for _, cond := range st.Conditions {
		if (cond.Type == hf.ConditionApplied || cond.Type == hf.ConditionAvailable || cond.Type == hf.ConditionHealth) && cond.Status != hf.StatusTrue {
			t.Errorf("landing-zone %s = %s (%s)", cond.Type, cond.Status, cond.Message)
		}
	}

	// One run of the adapter completed, on a second attempt.
	completed, retried := 0, false
	scheduled := map[int64]string{}
	for _, ev := range s.history(hf.KindCluster, c.ID) {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			retried = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == reconcile.ActivityRun {
			completed++
		}
	}
	if !retried {
		t.Error("the adapter run was not retried: the worker was not killed during it")
	}
	if completed != 1 {
		t.Errorf("%d adapter runs completed, want 1", completed)
	}
}

// applyGate is a proxy in front of the kube-apiserver, one listener per
// worker, that holds the first create on a path until released and then
// sends it on its own, whatever became of the client that sent it.
type applyGate struct {
	upstream *url.URL
	rt       http.RoundTripper
	match    func(*http.Request) bool
	caught   chan int
	dir      string

	mu       sync.Mutex
	taken    bool
	open     chan struct{}
	openOnce sync.Once
	zombie   chan int
}

func newApplyGate(t *testing.T, cfg *rest.Config, match func(*http.Request) bool) *applyGate {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	up, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &applyGate{upstream: up, rt: rt, match: match, caught: make(chan int, 1), open: make(chan struct{}), zombie: make(chan int, 1), dir: t.TempDir()}
}

// release lets the held request go and returns the kube-apiserver's answer
// to it (0 when it failed to send).
func (g *applyGate) release() int {
	g.openOnce.Do(func() { close(g.open) })
	select {
	case code := <-g.zombie:
		return code
	case <-time.After(30 * time.Second):
		return 0
	}
}

// kubeconfig starts listener i and returns a kubeconfig pointing at it.
func (g *applyGate) kubeconfig(t *testing.T, i int) string {
	t.Helper()
	file := filepath.Join(g.dir, fmt.Sprintf("kubeconfig-%d", i))
	if _, err := os.Stat(file); err == nil {
		return file
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(g.upstream) },
		Transport:     g.rt,
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		catch := !g.taken && g.match(r)
		if catch {
			g.taken = true
		}
		g.mu.Unlock()
		if !catch {
			proxy.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		g.caught <- i
		<-g.open
		// Sent detached from the (by now dead) client's connection.
		req, _ := http.NewRequestWithContext(context.Background(), r.Method, g.upstream.String()+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		code := 0
		if resp, err := g.rt.RoundTrip(req); err == nil {
			code = resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		g.zombie <- code
	}))
	t.Cleanup(func() {
		g.openOnce.Do(func() { close(g.open) }) // a held handler would block Close
		srv.Close()
	})
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gated
  cluster:
    server: %s
contexts:
- name: gated
  context: {cluster: gated, user: nobody}
users:
- name: nobody
  user: {}
current-context: gated
`, srv.URL)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
