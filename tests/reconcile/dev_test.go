//go:build integration

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// devProcess is `hyperfleet dev` (what `make run` starts) as a user runs
// it: its own state directory, ports and log.
type devProcess struct {
	*process
	api, ui string
}

func startDev(t *testing.T, state string, ports [3]int, kubeconfig string, extra ...string) *devProcess {
	t.Helper()
	args := []string{"dev", "--state-dir", state, "--log-format", "json",
		"--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--temporal-port", fmt.Sprint(ports[1]), "--ui-port", fmt.Sprint(ports[2])}
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	args = append(args, extra...)
	d := &devProcess{process: startProcess(t, "hyperfleet dev", args),
		api: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), ui: fmt.Sprintf("http://127.0.0.1:%d", ports[2])}
	waitReadyz(t, d.process, d.api)
	return d
}

func (d *devProcess) send(method, path, body string) (int, hf.Resource) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.api+hf.BasePath+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r hf.Resource
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

func (d *devProcess) cluster(id string) (int, hf.Resource) {
	return d.send(http.MethodGet, "/clusters/"+id, "")
}

func (d *devProcess) waitCondition(id, typ string, status hf.ConditionStatus, gen int64) hf.Resource {
	d.t.Helper()
	var last hf.Resource
	await.Eventually(d.t, 60*time.Second, "", func() (bool, string) {
		_, last = d.cluster(id)
		c, _ := last.Condition(typ)
		return c.Status == status && c.ObservedGeneration == gen,
			fmt.Sprintf("%s = %s at generation %d (%s), want %s at %d", typ, c.Status, c.ObservedGeneration, c.Message, status, gen)
	}, nil)
	return last
}

// The README's walkthrough, end to end against the real binary: `make run`
// on a machine without a cluster, a cluster created with curl goes Ready,
// its workflow is visible through the Temporal UI, state survives a
// restart, and KUBECONFIG brings the Kubernetes adapters in.
func TestDevRunsTheWholeSystem(t *testing.T) {
	state := t.TempDir()
	ports := [3]int{testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)}
	d := startDev(t, state, ports, "")
	if !strings.Contains(d.log.String(), "Set KUBECONFIG or pass --kubeconfig") {
		t.Error("without a cluster, the log does not say how to enable the Kubernetes adapters")
	}

	// The banner's example, sent as printed, goes Ready.
	d.runBannerExample()

	// An invalid spec: the validation adapter says why.
	code, c := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"dev-demo","spec":{"platform":{"type":"aws"},"nodes":0}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: HTTP %d", code)
	}
	got := d.waitCondition(c.ID, "ValidationSuccessful", hf.StatusFalse, 1)
	if v, _ := got.Condition("ValidationSuccessful"); !strings.Contains(v.Message, "spec.nodes") {
		t.Errorf("ValidationSuccessful message = %q, want it to name spec.nodes", v.Message)
	}
	if r, _ := got.Condition(hf.ConditionReady); r.Status != hf.StatusFalse {
		t.Errorf("Ready = %s with an invalid spec", r.Status)
	}

	// Fixed by a PATCH: generation 2 reconciles.
	if code, p := d.send(http.MethodPatch, "/clusters/"+c.ID, `{"spec":{"platform":{"type":"aws"},"nodes":3}}`); code != http.StatusOK || p.Generation != 2 {
		t.Fatalf("PATCH: HTTP %d, generation %d", code, p.Generation)
	}
	d.waitCondition(c.ID, hf.ConditionReady, hf.StatusTrue, 2)

	// The Temporal UI serves its pages and shows the cluster's workflow.
	wid := reconcile.WorkflowID(hf.KindCluster, c.ID)
	if code, body := httpGet(d.ui + "/namespaces/default/workflows/" + wid); code != http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("Temporal UI page: HTTP %d", code)
	}
	code, body := httpGet(d.ui + "/api/v1/namespaces/default/workflows/" + wid)
	if code != http.StatusOK || !strings.Contains(string(body), wid) || !strings.Contains(string(body), "HyperFleetResourceID") {
		t.Errorf("Temporal UI API for %s: HTTP %d %.300s", wid, code, body)
	}

	// Ctrl-C, then start again on the same state: nothing is lost.
	d.interrupt()
	kube := testenv.KubeAPI(t)
	// validation-job stays out: the test cluster has no nodes to run Jobs.
	d = startDev(t, state, ports, kube.Kubeconfig, "--cluster-adapters", "validation,landing-zone")
	if code, again := d.cluster(c.ID); code != http.StatusOK || again.Generation != 2 {
		t.Fatalf("after restart: HTTP %d, generation %d", code, again.Generation)
	}
	// Registering the Kubernetes adapters re-aggregates (not Ready until
	// they report), the relay's resync hands the new adapter list to the
	// running workflow, and the landing zone appears.
	d.waitCondition(c.ID, hf.ConditionReady, hf.StatusTrue, 2)
	d.waitCondition(c.ID, "LandingZoneSuccessful", hf.StatusTrue, 2)
	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), c.ID, metav1.GetOptions{}); err != nil {
		t.Errorf("landing-zone namespace for the cluster: %v", err)
	}

	// Delete: adapters clean up, the cluster goes, the namespace with it.
	if code, _ := d.send(http.MethodDelete, "/clusters/"+c.ID, ""); code != http.StatusAccepted {
		t.Fatalf("DELETE: HTTP %d", code)
	}
	await.Eventually(t, 90*time.Second, "", func() (bool, string) {
		code, r := d.cluster(c.ID)
		ready, _ := r.Condition(hf.ConditionReady)
		return code == http.StatusNotFound, fmt.Sprintf("GET answered %d (Ready: %s)", code, ready.Message)
	}, nil)
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		ns, err := cs.CoreV1().Namespaces().Get(context.Background(), c.ID, metav1.GetOptions{})
		return err != nil, fmt.Sprintf("namespace still there (phase %s)", ns.Status.Phase)
	}, nil)
	d.interrupt()
}

// post sends a body and returns the raw response, for tests that look at
// error documents.
func (d *devProcess) post(path, body string) (*http.Response, string) {
	d.t.Helper()
	resp, err := http.Post(d.api+hf.BasePath+path, "application/json", strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// runBannerExample finds the create command the start-up banner suggests,
// sends exactly its URL and body, and waits for that cluster to be Ready.
func (d *devProcess) runBannerExample() {
	d.t.Helper()
	var line string
	// The banner follows /readyz by a moment.
	await.Eventually(d.t, 30*time.Second, "", func() (bool, string) {
		for _, l := range strings.Split(d.log.String(), "\n") {
			if strings.Contains(l, "curl -s -X POST") {
				line = l
				return true, ""
			}
		}
		return false, "the start-up banner has no create example"
	}, nil)
	m := regexp.MustCompile(`-X POST (\S+) .*-d '([^']*)'`).FindStringSubmatch(line)
	if m == nil {
		d.t.Fatalf("the banner has no create example with a URL and a body: %q", line)
	}
	resp, err := http.Post(m[1], "application/json", strings.NewReader(m[2]))
	if err != nil {
		d.t.Fatal(err)
	}
	var c hf.Resource
	_ = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		d.t.Fatalf("the banner's example: HTTP %d", resp.StatusCode)
	}
	d.waitCondition(c.ID, hf.ConditionReady, hf.StatusTrue, 1)
}
