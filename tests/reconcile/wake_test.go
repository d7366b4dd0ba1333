//go:build integration

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/compat"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Upstream HyperFleet's end-to-end adapters: a namespace, then a Job that
// waits for it, then a Deployment that waits for the Job; and a ConfigMap
// per node pool. Contract section: "Reconciliation" (rounds, wake-ups).
var (
	chainAdapters         = []string{"cl-namespace", "cl-job", "cl-deployment"}
	chainNodePoolAdapters = []string{"np-configmap"}
)

// chainSystem runs the upstream adapters with the real Job, ReplicaSet and
// Deployment controllers and a pod stand-in that moves each pod on a
// second after it appears (there is no kubelet).
func chainSystem(t *testing.T, opts options) *system {
	t.Helper()
	compat.Require(t, "that a chain of upstream's dependent end-to-end adapters reconciles by progress and wake-ups")
	dir := filepath.Join(compat.Dir(), "upstream-e2e-adapters")
	opts.registered = map[string][]string{resource.KindCluster: chainAdapters, resource.KindNodePool: chainNodePoolAdapters}
	opts.adapters = nil
	for _, a := range append(slices.Clone(chainAdapters), chainNodePoolAdapters...) {
		opts.adapters = append(opts.adapters, dir+"/"+a)
	}
	pods, err := testenv.KubeAPI(t).StartPodStandIn(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pods.Stop)
	return newSystem(t, opts)
}

// historyFacts are what a reconcile workflow's history shows about how it
// got where it is.
type historyFacts struct {
	timersFired int
	// adapterRuns counts the adapter activities scheduled, per adapter;
	// otherActivities the activities that are not an adapter run.
	adapterRuns     map[string]int
	otherActivities []string
	// wakes lists the adapters named by each object-changed signal.
	wakes [][]string
	// runsAfterWake counts adapter runs scheduled after the first wake.
	runsAfterWake int
}

func factsOf(t *testing.T, events []*historypb.HistoryEvent) historyFacts {
	t.Helper()
	f := historyFacts{adapterRuns: map[string]int{}}
	for _, ev := range events {
		if ev.GetTimerFiredEventAttributes() != nil {
			f.timersFired++
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() != reconcile.ActivityRun {
			f.otherActivities = append(f.otherActivities, a.GetActivityType().GetName())
		}
		for _, c := range activityCalls(t, []*historypb.HistoryEvent{ev}) {
			if c.Activity == reconcile.ActivityRun {
				f.adapterRuns[c.Adapter]++
				if len(f.wakes) > 0 {
					f.runsAfterWake++
				}
			}
		}
		if sig := ev.GetWorkflowExecutionSignaledEventAttributes(); sig != nil {
			var in reconcile.Signal
			if err := json.Unmarshal(sig.GetInput().GetPayloads()[0].GetData(), &in); err != nil {
				t.Fatal(err)
			}
			if in.Reason == reconcile.ReasonObjectChanged {
				f.wakes = append(f.wakes, in.Changed)
			}
		}
	}
	return f
}

// A chain of dependent adapters reaches Reconciled by progress and wake-ups
// alone: with backoff set to ten minutes, any wait on a timer would show.
// Contract: "a round that made progress is followed at once by a round of
// the adapters not done; what an adapter applied wakes its workflow when
// it changes".
func TestDependentChainReconcilesWithoutTimers(t *testing.T) {
	opts := defaultOptions()
	opts.reconcile.InitialBackoff, opts.reconcile.MaxBackoff = 10*time.Minute, 10*time.Minute
	s := chainSystem(t, opts)

	c := s.createCluster("e2e-chain", nil)
	s.waitReady(c, 1, 90*time.Second)

	f := factsOf(t, s.history(resource.KindCluster, c.ID))
	if f.timersFired != 0 {
		t.Errorf("%d timers fired before the chain was Reconciled: progress waited on backoff", f.timersFired)
	}
	if len(f.otherActivities) != 0 {
		t.Errorf("activities other than adapter runs were scheduled: %v (the read-back is a local activity)", f.otherActivities)
	}
	woken := map[string]bool{}
	for _, w := range f.wakes {
		for _, a := range w {
			woken[a] = true
		}
	}
	// The Job completes and the Deployment turns available a second after
	// they exist: only a wake-up could have told the workflow.
	if !woken["cl-job"] || !woken["cl-deployment"] || f.runsAfterWake == 0 {
		t.Errorf("wake-ups %v, %d adapter runs after the first: want the Job and the Deployment to have woken the workflow", f.wakes, f.runsAfterWake)
	}
	for _, a := range chainAdapters {
		if n := f.adapterRuns[a]; n == 0 || n > 10 {
			t.Errorf("%s ran %d times (runs: %v)", a, n, f.adapterRuns)
		}
	}
	t.Logf("adapter runs %v, wake-ups %v; created %s\n%s", f.adapterRuns, f.wakes, c.CreatedTime.Format("15:04:05.000"), s.timeline(resource.KindCluster, c.ID))
	if os.Getenv("HYPERFLEET_TEST_LOG") != "" {
		jobs, _ := s.cs.BatchV1().Jobs(c.ID).List(context.Background(), metav1.ListOptions{})
		for _, j := range jobs.Items {
			t.Logf("job %s created %s conditions %+v", j.Name, j.CreationTimestamp.Format("15:04:05.000"), j.Status.Conditions)
		}
		pods, _ := s.cs.CoreV1().Pods(c.ID).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s created %s status %+v", p.Name, p.CreationTimestamp.Format("15:04:05.000"), p.Status.Conditions)
		}
	}

	// Upstream's cl-job names its Job after the generation: a new one per
	// spec change, complete before the cluster is Reconciled again.
	s.mustDo(http.MethodPatch, path(c), map[string]any{"spec": map[string]any{"size": "large"}}, http.StatusOK)
	s.waitReady(c, 2, 90*time.Second)
	if _, err := s.cs.BatchV1().Jobs(c.ID).Get(context.Background(), fmt.Sprintf("test-job-%s-2", c.ID), metav1.GetOptions{}); err != nil {
		t.Errorf("the Job of generation 2: %v", err)
	}
	if f := factsOf(t, s.history(resource.KindCluster, c.ID)); f.timersFired != 0 {
		t.Errorf("%d timers fired by generation 2", f.timersFired)
	}
	s.recordHistory("cluster-dependent-chain", resource.KindCluster, c.ID)
}

// The full lifecycle with upstream's adapters; a node pool's removal leaves
// its sibling and its parent Reconciled the whole time. Contract: "a node pool's removal wakes its cluster only
// while the cluster is deleting".
func TestChainLifecycleKeepsSiblingsReconciled(t *testing.T) {
	s := chainSystem(t, defaultOptions())

	c := s.createCluster("e2e-chain-lifecycle", map[string]any{"region": "eu"})
	np1 := s.createNodePool(c.ID, "workers", map[string]any{"replicas": 3})
	np2 := s.createNodePool(c.ID, "infra", map[string]any{"replicas": 1})
	s.waitReady(c, 1, 90*time.Second)
	for _, np := range []resource.Resource{np1, np2} {
		s.waitReady(np, 1, 60*time.Second)
	}
	for _, np := range []resource.Resource{np1, np2} {
		if !s.configMapExists(c.ID, "nodepool-config-"+np.ID) {
			t.Errorf("np-configmap did not create the ConfigMap of %s", np.Name)
		}
	}

	s.mustDo(http.MethodPatch, path(c), map[string]any{"spec": map[string]any{"region": "us"}}, http.StatusOK)
	c = s.waitReady(c, 2, 90*time.Second)

	// Labels bump the generation (adapters may render them): reconciled
	// again at generation 3.
	labelled := s.mustDo(http.MethodPatch, path(c), map[string]any{"labels": map[string]string{"team": "fleet"}}, http.StatusOK)
	if labelled.Generation != 3 || labelled.Labels["team"] != "fleet" {
		t.Errorf("after a label PATCH: generation %d, labels %v", labelled.Generation, labelled.Labels)
	}
	c = s.waitReady(c, 3, 90*time.Second)

	// Settled: the workflow waits out its stability window.
	var before reconcile.View
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		v, err := s.view(resource.KindCluster, c.ID)
		before = v
		return err == nil && v.Phase == reconcile.PhaseStable && v.Reconciled && v.Generation == 3, fmt.Sprintf("cluster workflow: %+v %v", v, err)
	}, nil)

	// Watch the parent and the sibling while one node pool goes.
	watch := s.watchReady(c, np2)
	s.mustDo(http.MethodDelete, path(np1), nil, http.StatusAccepted)
	s.waitGone(np1, 60*time.Second)
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		return !s.configMapExists(c.ID, "nodepool-config-"+np1.ID), "the removed node pool's ConfigMap is still there"
	}, nil)
	// Not a wait for a condition: nothing may happen, and a round the
	// removal caused would show by now.
	time.Sleep(3 * time.Second)
	if lapses := watch.stop(); len(lapses) > 0 {
		t.Errorf("Reconciled lapsed while a sibling node pool was removed:\n%s\ncluster workflow:\n%s", lapses, s.timeline(resource.KindCluster, c.ID))
	}
	after, err := s.view(resource.KindCluster, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Round != before.Round {
		t.Errorf("the cluster ran rounds %d..%d for a node pool's removal:\n%s", before.Round, after.Round, s.timeline(resource.KindCluster, c.ID))
	}

	s.mustDo(http.MethodDelete, path(c), nil, http.StatusAccepted)
	s.waitGone(c, 120*time.Second)
	if _, ok := s.get(np2); ok {
		t.Error("node pool infra outlived its cluster")
	}
	await.Eventually(t, 60*time.Second, "", func() (bool, string) {
		return !s.namespaceExists(c.ID), "namespace " + c.ID + " still exists"
	}, nil)
	s.waitClosed(resource.KindCluster, c.ID)
	s.recordHistory("cluster-chain-lifecycle", resource.KindCluster, c.ID)
}

// A managed object deleted by hand is back in seconds, by a wake-up rather
// than the (here hour-long) stability window's round.
func TestHandDeletedObjectIsRecreatedOnWake(t *testing.T) {
	s := newSystem(t, defaultOptions())
	c := s.createCluster("e2e-drift", nil)
	s.waitReady(c, 1, 60*time.Second)
	// Timers that fired while the cluster was created (a backoff while its
	// Job ran, on a slow machine) are not what this test is about.
	before := factsOf(t, s.history(resource.KindCluster, c.ID)).timersFired
	if err := s.cs.CoreV1().ConfigMaps(c.ID).Delete(context.Background(), "cluster-info", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "", func() (bool, string) {
		return s.configMapExists(c.ID, "cluster-info"), "cluster-info not re-created"
	}, nil)
	f := factsOf(t, s.history(resource.KindCluster, c.ID))
	if n := f.timersFired - before; n != 0 {
		t.Errorf("%d timers fired after the deletion: the re-creation waited on a timer", n)
	}
	if len(f.wakes) == 0 || !slices.Contains(f.wakes[len(f.wakes)-1], "landing-zone") {
		t.Errorf("wake-ups %v, want one naming landing-zone", f.wakes)
	}
	s.waitReady(c, 1, 30*time.Second)
	// Contract: everything the shipped adapters apply is watched (the
	// validation adapter applies nothing), so the resource rests for the
	// long safety-net window, not the 1-hour stability window set here.
	await.Eventually(t, 30*time.Second, "the watched safety-net wait", func() (bool, string) {
		v, err := s.view(resource.KindCluster, c.ID)
		if err != nil {
			return false, err.Error()
		}
		wait := time.Until(v.NextRound)
		return v.NextRoundCause == reconcile.WaitSafetyNet && wait > 8*time.Hour,
			fmt.Sprintf("next round in %s, cause %q (phase %s)", wait.Round(time.Second), v.NextRoundCause, v.Phase)
	}, nil)
}

// readyWatch samples resources' Ready condition until stopped and records
// every sample that was not Reconciled.
type readyWatch struct {
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	lapses []string
}

func (s *system) watchReady(rs ...resource.Resource) *readyWatch {
	w := &readyWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			for _, r := range rs {
				code, out := s.doQuiet(http.MethodGet, path(r))
				var got resource.Resource
				_ = json.Unmarshal(out, &got)
				if code != http.StatusOK || !ready(got) {
					w.mu.Lock()
					w.lapses = append(w.lapses, fmt.Sprintf("  %s %s at %s: HTTP %d, %s", r.Kind, r.Name, time.Now().Format(time.StampMilli), code, conditionsOf(got)))
					w.mu.Unlock()
				}
			}
			select {
			case <-w.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *readyWatch) stop() string {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := ""
	for _, l := range w.lapses {
		out += l + "\n"
	}
	return out
}

// doQuiet is do for a goroutine: it reports a failed request as status 0
// instead of failing the test from outside its goroutine.
func (s *system) doQuiet(method, p string) (int, []byte) {
	req, _ := http.NewRequest(method, s.url+resource.BasePath+p, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var b json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&b)
	return resp.StatusCode, b
}

// timeline renders a workflow's signals and adapter runs, in order, for a
// failure message.
func (s *system) timeline(kind, id string) string {
	out := ""
	for _, ev := range s.history(kind, id) {
		at := ev.GetEventTime().AsTime().Format("15:04:05.000")
		if sig := ev.GetWorkflowExecutionSignaledEventAttributes(); sig != nil {
			out += fmt.Sprintf("  %s signal %s\n", at, sig.GetInput().GetPayloads()[0].GetData())
		}
		for _, c := range activityCalls(s.t, []*historypb.HistoryEvent{ev}) {
			out += fmt.Sprintf("  %s run %s at generation %d\n", at, c.Adapter, c.Generation)
		}
		if ev.GetTimerStartedEventAttributes() != nil {
			out += fmt.Sprintf("  %s timer %s\n", at, ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration())
		}
	}
	return out
}
