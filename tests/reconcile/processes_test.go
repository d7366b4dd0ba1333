package reconcile

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
)

// The production topology as separate processes, configured the way an
// operator would: Temporal on its own, `hyperfleet serve` on PostgreSQL
// from HYPERFLEET_* variables, and `hyperfleet worker` hosting the
// reconciler and two adapters from flags. A cluster created before any
// worker runs is handed to Temporal and waits on its task queue until one
// polls.
func TestSeparateProcesses(t *testing.T) {
	temporalPort, apiPort, metricsPort := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	temporalAddr := fmt.Sprintf("127.0.0.1:%d", temporalPort)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)

	temporal := startProcess(t, "hyperfleet temporal", []string{"temporal", "--memory", "--port", fmt.Sprint(temporalPort), "--ui-port", "0", "--log-format", "json"})
	serve := startProcess(t, "hyperfleet serve", []string{"serve"},
		"HYPERFLEET_LISTEN="+fmt.Sprintf("127.0.0.1:%d", apiPort),
		"HYPERFLEET_DB_DRIVER=postgres", "HYPERFLEET_DB_URL="+testenv.PostgresDB(t),
		`HYPERFLEET_CLUSTER_ADAPTERS=["validation"]`, "HYPERFLEET_NODEPOOL_ADAPTERS=nodepool-validation",
		"HYPERFLEET_TEMPORAL_ADDRESS="+temporalAddr, "HYPERFLEET_RECONCILE_BACKOFF=200ms",
		"HYPERFLEET_LOG_FORMAT=json")
	waitReadyz(t, serve, api)
	temporal.failIfExited()

	d := &devProcess{process: serve, api: api}
	code, c := d.send(http.MethodPost, "/clusters", `{"kind":"Cluster","name":"separate-processes","spec":{"nodes":3}}`)
	if code != http.StatusCreated {
		t.Fatalf("create cluster: HTTP %d", code)
	}
	code, np := d.send(http.MethodPost, "/clusters/"+c.ID+"/nodepools", `{"kind":"NodePool","name":"workers","spec":{"replicas":2}}`)
	if code != http.StatusCreated {
		t.Fatalf("create node pool: HTTP %d", code)
	}

	startProcess(t, "hyperfleet worker", []string{"worker", "--temporal-address", temporalAddr, "--reconciler",
		"--api-base-url", api, "--adapter-dir", shipped("validation"), "--adapter-dir", shipped("nodepool-validation"),
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--log-format", "json"})

	d.waitCondition(c.ID, hf.ConditionReady, hf.StatusTrue, 1)
	eventually(t, 60*time.Second, func() (bool, string) {
		code, r := d.send(http.MethodGet, "/clusters/"+c.ID+"/nodepools/"+np.ID, "")
		ready, _ := r.Condition(hf.ConditionReady)
		return code == http.StatusOK && ready.Status == hf.StatusTrue, fmt.Sprintf("node pool: HTTP %d, Ready=%s (%s)", code, ready.Status, ready.Message)
	}, nil)

	// What an operator watches: the relay's hand-offs on the API, the
	// adapters' runs on the worker.
	_, apiMetrics := httpGet(api + "/metrics")
	if !strings.Contains(string(apiMetrics), `hyperfleet_relay_deliveries_total{outcome="ok"}`) {
		t.Error("the API's /metrics has no successful relay deliveries")
	}
	_, workerMetrics := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	for _, adapter := range []string{"validation", "nodepool-validation"} {
		if !strings.Contains(string(workerMetrics), fmt.Sprintf(`hyperfleet_adapter_runs_total{adapter_name=%q,outcome="success"}`, adapter)) {
			t.Errorf("the worker's /metrics has no successful %s run", adapter)
		}
	}

	if code, _ := d.send(http.MethodDelete, "/clusters/"+c.ID, ""); code != http.StatusAccepted {
		t.Fatalf("DELETE: HTTP %d", code)
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		code, _ := d.cluster(c.ID)
		return code == http.StatusNotFound, fmt.Sprintf("GET answered %d", code)
	}, nil)
	serve.interrupt()
}
