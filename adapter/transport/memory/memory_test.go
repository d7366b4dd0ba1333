package memory

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/adapter/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, transporttest.Suite{Transport: New(nil), Object: configMap("default")})
}

// configMap builds the conformance suite's objects as config maps.
func configMap(namespace string) func(name string, labels map[string]string, generation string) transport.Object {
	return func(name string, labels map[string]string, generation string) transport.Object {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		return transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
			"name": name, "namespace": namespace, "labels": l,
			"annotations": map[string]any{transporttest.GenerationAnnotation: generation}}, "data": map[string]any{"k": generation}}
	}
}
