package executor

import (
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

// nested finds a sub-resource inside a ManifestWork (spec.workload.manifests)
// and returns it enriched with its per-manifest status from
// status.resourceStatus.manifests[]: top-level "conditions" and
// "statusFeedback", so expressions read resources.<nested>.conditions and
// resources.<nested>.statusFeedback.values directly.
func (e *Engine) nested(work transport.Object, d taskconfig.Discovery, data map[string]any) transport.Object {
	spec, _ := work["spec"].(map[string]any)
	workload, _ := spec["workload"].(map[string]any)
	manifests, _ := workload["manifests"].([]any)
	ns, _ := e.render(d.Namespace, data)
	name, _ := e.render(d.ByName, data)
	sel := map[string]string{}
	if d.BySelectors != nil {
		for k, v := range d.BySelectors.LabelSelector {
			sel[k], _ = e.render(v, data)
		}
	}
	for ordinal, m := range manifests {
		obj, ok := m.(map[string]any)
		if !ok {
			continue
		}
		ref := transport.RefOf(obj)
		if ns != "" && ns != "*" && ref.Namespace != ns {
			continue
		}
		if d.ByName != "" && ref.Name != name {
			continue
		}
		if d.BySelectors != nil && !transport.Matches(transport.Labels(obj), sel) {
			continue
		}
		out := make(map[string]any, len(obj)+2)
		for k, v := range obj {
			out[k] = v
		}
		if st := manifestStatus(work, ordinal, ref); st != nil {
			if c, ok := st["conditions"]; ok {
				out["conditions"] = c
			}
			if f, ok := st["statusFeedback"]; ok {
				out["statusFeedback"] = f
			}
		}
		return out
	}
	return nil
}

// manifestStatus finds a manifest's entry in status.resourceStatus by
// kind/name/namespace, falling back to its ordinal.
func manifestStatus(work transport.Object, ordinal int, ref transport.Ref) map[string]any {
	status, _ := work["status"].(map[string]any)
	rs, _ := status["resourceStatus"].(map[string]any)
	entries, _ := rs["manifests"].([]any)
	var byOrdinal map[string]any
	for _, e := range entries {
		entry, ok := e.(map[string]any)
		if !ok {
			continue
		}
		meta, _ := entry["resourceMeta"].(map[string]any)
		kind, _ := meta["kind"].(string)
		name, _ := meta["name"].(string)
		ns, _ := meta["namespace"].(string)
		if strings.EqualFold(kind, ref.Kind) && name == ref.Name && ns == ref.Namespace {
			return entry
		}
		if o, ok := meta["ordinal"].(int64); ok && int(o) == ordinal {
			byOrdinal = entry
		}
	}
	return byOrdinal
}
