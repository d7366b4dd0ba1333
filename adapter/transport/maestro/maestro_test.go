//go:build integration

package maestro

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/transporttest"
	"github.com/hyperfleet/hyperfleet/internal/await"
	"github.com/hyperfleet/hyperfleet/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// env is a real Maestro server with a real agent for the consumer
// "spoke1" applying to the sharedEnv kube-apiserver.
type env struct {
	m  *testenv.Maestro
	cs kubernetes.Interface
}

var (
	envOnce   sync.Once
	sharedEnv env
)

func realMaestro(t *testing.T) env {
	t.Helper()
	envOnce.Do(func() {
		kube := testenv.KubeAPI(t)
		m := testenv.MaestroServer(t)
		m.RegisterConsumer(t, "spoke1")
		m.RegisterConsumer(t, "spoke2")
		m.StartAgent(t, "spoke1", kube)
		m.StartAgent(t, "spoke2", kube)
		cs, err := kubernetes.NewForConfig(kube.Config)
		if err != nil {
			t.Fatal(err)
		}
		sharedEnv = env{m: m, cs: cs}
	})
	if sharedEnv.m == nil {
		t.Fatal("the Maestro environment failed to start in an earlier test")
	}
	return sharedEnv
}

func newClient(t *testing.T, m *testenv.Maestro, source string) *Transport {
	t.Helper()
	c, err := New(Config{GRPCAddress: m.GRPCAddr, HTTPAddress: m.HTTPURL, SourceID: source, Insecure: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return NewTransport(c)
}

// work is a ManifestWork placing a namespace and a config map, with
// feedback rules reading the namespace's phase and the map's data.
func work(name, gen, value string) transport.Object {
	return transport.Object{
		"apiVersion": APIVersion, "kind": Kind,
		"metadata": map[string]any{
			"name":        name,
			"labels":      map[string]any{"hyperfleet.io/cluster-id": name, "test": "transport"},
			"annotations": map[string]any{"hyperfleet.io/generation": gen},
		},
		"spec": map[string]any{
			"workload": map[string]any{"manifests": []any{
				map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}},
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "config", "namespace": name},
					"data":     map[string]any{"value": value}},
			}},
			"manifestConfigs": []any{
				map[string]any{
					"resourceIdentifier": map[string]any{"group": "", "resource": "namespaces", "name": name},
					"feedbackRules":      []any{map[string]any{"type": "JSONPaths", "jsonPaths": []any{map[string]any{"name": "phase", "path": ".status.phase"}}}},
				},
				map[string]any{
					"resourceIdentifier": map[string]any{"group": "", "resource": "configmaps", "name": "config", "namespace": name},
					"feedbackRules":      []any{map[string]any{"type": "JSONPaths", "jsonPaths": []any{map[string]any{"name": "value", "path": ".data.value"}}}},
				},
			},
		},
	}
}

// feedback reads a status feedback value of a manifest, as the engine's
// nested discovery and statusFeedbackValue do.
func feedback(obj transport.Object, kind, name string) string {
	status, _ := obj["status"].(map[string]any)
	rs, _ := status["resourceStatus"].(map[string]any)
	entries, _ := rs["manifests"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		meta, _ := entry["resourceMeta"].(map[string]any)
		if meta["kind"] != kind {
			continue
		}
		fb, _ := entry["statusFeedback"].(map[string]any)
		values, _ := fb["values"].([]any)
		for _, v := range values {
			vm, _ := v.(map[string]any)
			if vm["name"] == name {
				fv, _ := vm["fieldValue"].(map[string]any)
				s, _ := fv["string"].(string)
				if s == "" {
					s, _ = fv["jsonRaw"].(string)
				}
				return s
			}
		}
	}
	return ""
}

func condition(obj transport.Object, typ string) string {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == typ {
			s, _ := cm["status"].(string)
			return s
		}
	}
	return ""
}

func TestManifestWorkLifecycleThroughRealMaestro(t *testing.T) {
	e := realMaestro(t)
	tr := newClient(t, e.m, "transport-lifecycle")
	ctx := context.Background()
	name := fmt.Sprintf("tr-life-%d", time.Now().UnixNano()%1e6)
	ref := transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: name}

	if got, err := tr.Get(ctx, "spoke1", ref); err != nil || got != nil {
		t.Fatalf("get before create = %v, %v", got, err)
	}
	created, err := tr.Create(ctx, "spoke1", work(name, "1", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if transport.Annotation(created, "hyperfleet.io/generation") != "1" {
		t.Errorf("created = %v", created)
	}

	// The agent applies it to the kube-apiserver; status and feedback flow back.
	var live transport.Object
	await.Eventually(t, 30*time.Second, "applied with feedback", func() (bool, string) {
		live, err = tr.Get(ctx, "spoke1", ref)
		if err != nil || live == nil {
			return false, fmt.Sprint(live, err)
		}
		return condition(live, "Applied") == "True" && condition(live, "Available") == "True" &&
				feedback(live, "Namespace", "phase") == "Active" && feedback(live, "ConfigMap", "value") == "one",
			fmt.Sprintf("status %v", live["status"])
	})
	cm, err := e.cs.CoreV1().ConfigMaps(name).Get(ctx, "config", metav1.GetOptions{})
	if err != nil || cm.Data["value"] != "one" {
		t.Fatalf("config map on the cluster = %v, %v", cm, err)
	}
	// The generation annotation was stamped on every manifest.
	if cm.Annotations["hyperfleet.io/generation"] != "1" {
		t.Errorf("config map annotations = %v", cm.Annotations)
	}
	manifests := live["spec"].(map[string]any)["workload"].(map[string]any)["manifests"].([]any)
	if len(manifests) != 2 || transport.Annotation(manifests[0].(map[string]any), "hyperfleet.io/generation") != "1" {
		t.Errorf("manifests read back = %v", manifests)
	}

	// A second create of the same work is refused; Update merge-patches it.
	if _, err := tr.Create(ctx, "spoke1", work(name, "1", "one")); err == nil {
		t.Error("creating an existing ManifestWork succeeded")
	}
	if _, err := tr.Update(ctx, "spoke1", work(name, "2", "two")); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "patched", func() (bool, string) {
		cm, err := e.cs.CoreV1().ConfigMaps(name).Get(ctx, "config", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["value"] == "two" && cm.Annotations["hyperfleet.io/generation"] == "2", fmt.Sprint(cm.Data, cm.Annotations)
	})
	await.Eventually(t, 30*time.Second, "feedback of the patch", func() (bool, string) {
		live, err = tr.Get(ctx, "spoke1", ref)
		return err == nil && live != nil && feedback(live, "ConfigMap", "value") == "two" &&
			transport.Annotation(live, "hyperfleet.io/generation") == "2", fmt.Sprint(err)
	})

	// List by labels finds it on its consumer only.
	for _, c := range []struct {
		target string
		labels map[string]string
		want   int
	}{
		{"spoke1", map[string]string{"hyperfleet.io/cluster-id": name}, 1},
		{"spoke1", map[string]string{"hyperfleet.io/cluster-id": name, "test": "other"}, 0},
		{"spoke2", map[string]string{"hyperfleet.io/cluster-id": name}, 0},
	} {
		items, err := tr.List(ctx, c.target, transport.Query{APIVersion: APIVersion, Kind: Kind, Labels: c.labels})
		if err != nil || len(items) != c.want {
			t.Errorf("list %s %v = %d items, %v; want %d", c.target, c.labels, len(items), err, c.want)
		}
	}

	// Delete: Maestro deletes it, the agent removes what it applied. The
	// delete is repeated every 5 s while the work is readable, as the
	// engine does on each run: this agent can lose a delete that reaches
	// it while it patches the work's status (upstream's race, see
	// TestDeleteOfADeletingWorkIsPublishedAgain), and the next one heals it.
	if err := tr.Delete(ctx, "spoke1", ref, "Background"); err != nil {
		t.Fatal(err)
	}
	deleteAgain := redelete(t, tr, "spoke1", ref)
	await.Eventually(t, 60*time.Second, "deleted", func() (bool, string) {
		got, err := tr.Get(ctx, "spoke1", ref)
		if err != nil || got != nil {
			deleteAgain()
			return false, fmt.Sprint("still there: ", err)
		}
		_, err = e.cs.CoreV1().ConfigMaps(name).Get(ctx, "config", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint("config map: ", err)
	})
	if err := tr.Delete(ctx, "spoke1", ref, "Background"); err != nil {
		t.Errorf("deleting an absent ManifestWork: %v", err)
	}
}

// redelete returns what a wait for a deletion calls while the work is
// still there: every 5 s it deletes the work again, as the engine does on
// each run, since the agent can lose a delete.
func redelete(t *testing.T, tr transport.Transport, target string, ref transport.Ref) func() {
	again := time.Now().Add(5 * time.Second)
	return func() {
		if time.Now().Before(again) {
			return
		}
		t.Logf("%s still there 5 s after its delete; deleting again", ref.Name)
		if err := tr.Delete(context.Background(), target, ref, "Background"); err != nil {
			t.Logf("delete %s again: %v", ref.Name, err)
		}
		again = time.Now().Add(5 * time.Second)
	}
}

// A work the agent never confirms deleted stays deleting; each later
// Delete must reach Maestro again (a new delete event for the agent). An
// agent can lose a delete that lands while it patches the work's status (an
// OCM SDK race that later Maestro releases heal by republishing), and the
// engine's Delete on its next run is what heals it here. Consumer
// "no-agent" has no agent, so nothing confirms the first delete.
func TestDeleteOfADeletingWorkIsPublishedAgain(t *testing.T) {
	e := realMaestro(t)
	e.m.RegisterConsumer(t, "no-agent")
	tr := newClient(t, e.m, "transport-redelete")
	ctx := context.Background()
	name := fmt.Sprintf("tr-redelete-%d", time.Now().UnixNano()%1e6)
	ref := transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: name}
	id := string(workID("transport-redelete", "no-agent", name))
	db, err := sql.Open("pgx", e.m.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deleteEvents := func() int {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE source_id = $1 AND event_type = 'Delete'", id).Scan(&n); err != nil {
			t.Fatalf("read Maestro's event log: %v", err)
		}
		return n
	}

	if _, err := tr.Create(ctx, "no-agent", work(name, "1", "one")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := tr.Delete(ctx, "no-agent", ref, "Background"); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
		await.Eventually(t, 30*time.Second, fmt.Sprintf("delete %d recorded", i), func() (bool, string) {
			live, err := tr.Get(ctx, "no-agent", ref)
			if err != nil || live == nil {
				return false, fmt.Sprint("the work should still be there, deleting: ", live, err)
			}
			meta, _ := live["metadata"].(map[string]any)
			n := deleteEvents()
			return meta["deletionTimestamp"] != nil && n == i, fmt.Sprintf("deletionTimestamp %v, %d delete events", meta["deletionTimestamp"], n)
		})
	}
}

func TestFailuresNameTheCause(t *testing.T) {
	e := realMaestro(t)
	tr := newClient(t, e.m, "transport-failures")
	ctx := context.Background()

	_, err := tr.Create(ctx, "no-such-consumer", work("tr-unreg", "1", "x"))
	if err == nil || !strings.Contains(err.Error(), `consumer "no-such-consumer" is not registered`) || !strings.Contains(err.Error(), "/api/maestro/v1/consumers") {
		t.Errorf("unregistered consumer: %v", err)
	}
	noManifests := work("tr-empty", "1", "x")
	noManifests["spec"] = map[string]any{"workload": map[string]any{"manifests": []any{}}}
	if _, err := tr.Create(ctx, "spoke1", noManifests); err == nil || !strings.Contains(err.Error(), "has no manifests") {
		t.Errorf("no manifests: %v", err)
	}
	cm := transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}
	if _, err := tr.Create(ctx, "spoke1", cm); err == nil || !strings.Contains(err.Error(), "places ManifestWorks, not ConfigMap") {
		t.Errorf("not a ManifestWork: %v", err)
	}

	// Nothing listens on these ports.
	down, err := New(Config{GRPCAddress: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)),
		HTTPAddress: fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), SourceID: "down", Insecure: true, Timeout: 2 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	dt := NewTransport(down)
	if _, err := dt.Get(ctx, "spoke1", transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: "x"}); err == nil || !strings.Contains(err.Error(), "Maestro is unreachable") {
		t.Errorf("get from a stopped server: %v", err)
	}
	if _, err := dt.Create(ctx, "spoke1", work("tr-down", "1", "x")); err == nil || !strings.Contains(err.Error(), "Maestro is unreachable") {
		t.Errorf("create on a stopped server: %v", err)
	}
}

// Concurrent activities share one client across consumers: every
// ManifestWork lands on the consumer it was meant for.
func TestConcurrentConsumersShareOneClient(t *testing.T) {
	e := realMaestro(t)
	// A source of its own per run, so that -count=N counts this run's works.
	run := time.Now().UnixNano() % 1e6
	source := fmt.Sprintf("transport-concurrent-%d", run)
	tr := newClient(t, e.m, source)
	ctx := context.Background()
	base := fmt.Sprintf("tr-conc-%d", run)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		for _, consumer := range []string{"spoke1", "spoke2"} {
			wg.Go(func() {
				name := fmt.Sprintf("%s-%s-%d", base, consumer, i)
				if _, err := tr.Create(ctx, consumer, work(name, "1", consumer)); err != nil {
					errs <- err
					return
				}
				got, err := tr.Get(ctx, consumer, transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: name})
				if err != nil || got == nil {
					errs <- fmt.Errorf("get %s on %s: %v %v", name, consumer, got, err)
					return
				}
				if ns := got["metadata"].(map[string]any)["namespace"]; ns != consumer {
					errs <- fmt.Errorf("%s landed on %v, not %s", name, ns, consumer)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, consumer := range []string{"spoke1", "spoke2"} {
		bundles := e.m.ResourceBundles(t, fmt.Sprintf("source='%s' and consumer_name='%s'", source, consumer))
		if len(bundles) != 20 {
			t.Errorf("%s has %d ManifestWorks of this source, want 20", consumer, len(bundles))
		}
		for _, b := range bundles {
			// The bundle's own name is Maestro's id; the ManifestWork's is in metadata.
			meta, _ := b["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			if !strings.Contains(name, "-"+consumer+"-") {
				t.Errorf("%s holds %s", consumer, name)
			}
		}
	}
}

// Maestro stopped between rounds: reads and writes fail naming the cause,
// and once it is back the same client publishes again without a restart.
func TestRecoversWhenMaestroReturns(t *testing.T) {
	kube := testenv.KubeAPI(t)
	m := testenv.NewMaestro(t)
	m.RegisterConsumer(t, "spoke3")
	m.StartAgent(t, "spoke3", kube)
	c, err := New(Config{GRPCAddress: m.GRPCAddr, HTTPAddress: m.HTTPURL, SourceID: "transport-restart", Insecure: true, Timeout: 3 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tr := NewTransport(c)
	ctx := context.Background()
	if _, err := tr.Create(ctx, "spoke3", work("tr-restart-a", "1", "a")); err != nil {
		t.Fatal(err)
	}

	m.Stop()
	ref := transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: "tr-restart-a"}
	if _, err := tr.Get(ctx, "spoke3", ref); err == nil || !strings.Contains(err.Error(), "Maestro is unreachable") {
		t.Errorf("get while stopped: %v", err)
	}
	if _, err := tr.Create(ctx, "spoke3", work("tr-restart-b", "1", "b")); err == nil || !strings.Contains(err.Error(), "Maestro is unreachable") {
		t.Errorf("create while stopped: %v", err)
	}

	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 60*time.Second, "create after the restart", func() (bool, string) {
		_, err := tr.Create(ctx, "spoke3", work("tr-restart-b", "1", "b"))
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	// The agent reconnects to the restarted server on its own backoff,
	// which is Maestro's, not this client's: seen from 2 s to over a minute.
	await.Eventually(t, 3*time.Minute, "applied after the restart", func() (bool, string) {
		got, err := tr.Get(ctx, "spoke3", transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: "tr-restart-b"})
		return err == nil && got != nil && feedback(got, "ConfigMap", "value") == "b", fmt.Sprint(err)
	})
	if n := len(m.ResourceBundles(t, "source='transport-restart'")); n != 2 {
		t.Errorf("Maestro holds %d works of this source after the restart, want 2 (nothing duplicated)", n)
	}
}

func TestConformance(t *testing.T) {
	e := realMaestro(t)
	transporttest.Run(t, transporttest.Suite{Transport: newClient(t, e.m, "transport-conformance"), Target: "spoke1", Within: 60 * time.Second,
		Object: func(name string, labels map[string]string, generation string) transport.Object {
			// A config map in a namespace that stays: deleting a work that
			// placed a namespace waits for the test cluster's namespace
			// controller (40 s and more), which is not the transport's
			// behaviour. TestManifestWorkLifecycleThroughRealMaestro places one.
			w := transport.Object{
				"apiVersion": APIVersion, "kind": Kind,
				"metadata": map[string]any{"name": name, "annotations": map[string]any{"hyperfleet.io/generation": generation}},
				"spec": map[string]any{"workload": map[string]any{"manifests": []any{
					map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
						"metadata": map[string]any{"name": name, "namespace": "default"},
						"data":     map[string]any{"value": generation}},
				}}},
			}
			meta := w["metadata"].(map[string]any)
			l := map[string]any{}
			for k, v := range labels {
				l[k] = v
			}
			meta["labels"] = l
			return w
		}})
}
