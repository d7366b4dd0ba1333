//go:build integration

package reconcile

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	hf "github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Contract (docs/reliability.md, "Trust boundaries"): a workflow input is
// not trusted. Anyone who can start a reconcile workflow on Temporal once
// made the reconciler send its read-back, with the workers' credentials,
// to any URL the input named. A reference that is not the API's own path
// of a resource now fails the workflow at once, and nothing is called.
func TestWorkflowInputCannotSendCredentialsElsewhere(t *testing.T) {
	s := newSystem(t, defaultOptions())
	var calls atomic.Int64
	var got atomic.Value
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	thief := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		got.Store(r.Header.Get("Authorization") + " " + r.Header.Get("X-HyperFleet-System"))
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = thief.Serve(ln) }()
	t.Cleanup(func() { _ = thief.Close() })

	cases := []struct{ name, path string }{
		{"another origin", "http://" + ln.Addr().String() + "/steal"},
		{"another resource's path", hf.BasePath + "/clusters/someone-else"},
		{"a path out of the API", hf.BasePath + "/../../steal/evil-0001"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("evil-%04d", i)
			ref := reconcile.Ref{Kind: hf.KindCluster, ID: id, Path: c.path}
			in := reconcile.NewInput(ref, 1, []string{"validation"}, reconcile.Options{})
			run, err := s.tc.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
				ID: reconcile.WorkflowID(hf.KindCluster, id), TaskQueue: reconcile.TaskQueue,
			}, reconcile.WorkflowName, in)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = run.Get(ctx, nil)
			if err == nil || !strings.Contains(err.Error(), "names no resource of the API") {
				t.Fatalf("the workflow ended with %v, want it to refuse its input", err)
			}
			await.Eventually(t, 10*time.Second, "", func() (bool, string) {
				info := s.describeWorkflow(hf.KindCluster, id)
				return info.Status == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, fmt.Sprintf("workflow %s", info.Status)
			})
		})
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the listener received %d calls (headers %v): a forged workflow input reached it", n, got.Load())
	}
}
