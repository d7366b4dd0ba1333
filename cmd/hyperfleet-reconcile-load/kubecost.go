package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// kubeRequests reads the kube-apiserver's request counters; subtracting
// two readings tells what a run asked of Kubernetes.
func (b *bench) kubeRequests(ctx context.Context) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(b.kube.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read kube-apiserver metrics: %w", err)
	}
	return requestCounters(string(raw))
}

// requestCounters sums apiserver_request_total from a Prometheus text
// exposition by "VERB resource[/subresource]".
func requestCounters(text string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("read kube-apiserver metrics: %w", err)
	}
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return out, nil
}

// kubeDelta renders what changed between two readings per cluster, the
// most frequent first (requests under 0.05 a cluster left out).
func kubeDelta(before, after map[string]float64, n float64) string {
	type kv struct {
		k string
		v float64
	}
	var rows []kv
	total := 0.0
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			rows = append(rows, kv{k, d / n})
			total += d / n
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].v != rows[j].v {
			return rows[i].v > rows[j].v
		}
		return rows[i].k < rows[j].k
	})
	parts := []string{fmt.Sprintf("%.1f in all", total)}
	for _, r := range rows {
		if r.v >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.2f", r.k, r.v))
		}
	}
	return strings.Join(parts, ", ")
}
