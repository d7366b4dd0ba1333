package main

import "testing"

// Two readings of the kube-apiserver's counters, the way it exposes them:
// one series per verb, resource, subresource and code, summed per verb
// and resource; other metrics are ignored.
func TestKubeRequestsPerCluster(t *testing.T) {
	before, err := requestCounters(`# HELP apiserver_request_total Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} 4
apiserver_request_total{code="201",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_duration_seconds_count{resource="jobs",verb="POST"} 9
`)
	if err != nil {
		t.Fatal(err)
	}
	after, err := requestCounters(`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} 8
apiserver_request_total{code="201",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="batch",resource="jobs",scope="resource",subresource="status",verb="PUT",version="v1"} 2
`)
	if err != nil {
		t.Fatal(err)
	}
	if after["POST jobs"] != 4 || after["PUT jobs/status"] != 2 {
		t.Errorf("counters %v: want POST jobs 4 (two codes summed), PUT jobs/status 2", after)
	}
	got := kubeDelta(before, after, 2)
	want := "4.5 in all, LIST namespaces 2.00, POST jobs 1.50, PUT jobs/status 1.00"
	if got != want {
		t.Errorf("kubeDelta = %q, want %q", got, want)
	}
	if _, err := requestCounters(`apiserver_request_total{verb="GET"} many`); err == nil {
		t.Error("a value that is not a number was accepted")
	}
}

// A run's machine CPU split into the control plane, the driver and the
// rest, per 1,000 clusters; the rest is what the named parts leave.
func TestMachinePartsPerThousandClusters(t *testing.T) {
	before := map[string]float64{"kube-apiserver": 10, "etcd": 2, "kube-controller-manager": 1, "this process": 5}
	after := map[string]float64{"kube-apiserver": 70, "etcd": 12, "kube-controller-manager": 6, "this process": 17}
	for _, tc := range []struct {
		production bool
		want       string
	}{
		{false, "per 1,000 clusters: kube-apiserver 30.0, etcd 5.0, kube-controller-manager 2.5, " +
			"the driver (the embedded stack, the load and the pod stand-in) 6.0, the rest of the machine 56.5"},
		{true, "per 1,000 clusters: kube-apiserver 30.0, etcd 5.0, kube-controller-manager 2.5, " +
			"the driver (the load, the pod stand-in and the API balancer) 6.0, " +
			"the rest of the machine (the production shape's processes, the kernel) 56.5"},
	} {
		if got := partsNote(before, after, 200, 2000, tc.production); got != tc.want {
			t.Errorf("production %v:\n got %s\nwant %s", tc.production, got, tc.want)
		}
	}
}
