//go:build integration

package adapters

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Kubernetes counterpart of upstream's cl-m-wrong-ds against a real
// kube-apiserver and the real API: the ConfigMap is applied, its discovery
// looks for another name, and the adapter reports the failed resources
// phase (Health=False, ExecutionFailed:resources, naming the resource and
// the discovery) instead of a healthy run, on every run.
func TestWrongDiscoveryFailsTheResourcesPhase(t *testing.T) {
	w := newWorld(t, []string{"wrong-discovery"}, []string{})
	c := w.createCluster("wrong-discovery", map[string]any{})
	eng := w.adapter("../../adapter/dryrun/testdata/wrong-discovery")
	for _, want := range []string{"clusterInfo=CREATE", "clusterInfo=SKIP"} {
		res := w.run(eng, c)
		p, conds := reported(t, res, "statusPayload")
		health := conditionOf(p, "Health")
		msg, _ := health["message"].(string)
		if ops(res) != want || conds != "Applied=False Available=False Health=False" || health["reason"] != "ExecutionFailed:resources" ||
			!strings.Contains(msg, `resource clusterInfo: ConfigMap "cluster-`+c.ID+`-info" was`) ||
			!strings.Contains(msg, `discovery.by_name "cluster-`+c.ID+`-information": ConfigMap not found in namespace "default"`) {
			t.Errorf("run %s: %s %s, Health %v\n%s", want, ops(res), conds, health, trace(res))
		}
	}
	// What was applied is there; only the discovery missed it.
	cm, err := w.cs.CoreV1().ConfigMaps("default").Get(context.Background(), "cluster-"+c.ID+"-info", metav1.GetOptions{})
	if err != nil || cm.Data["cluster_id"] != c.ID {
		t.Fatalf("applied ConfigMap: %v, %v", cm, err)
	}
	// The stored status says so, and the cluster is not Ready.
	got := w.mustGet(c)
	if cond := condition(got, "WrongDiscoverySuccessful"); !strings.HasPrefix(cond, "False/") || condition(got, "Ready") == "True/ResourceReady" {
		t.Errorf("cluster conditions: WrongDiscoverySuccessful %s, Ready %s", cond, condition(got, "Ready"))
	}
}
