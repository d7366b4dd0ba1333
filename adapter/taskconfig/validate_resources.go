package taskconfig

import (
	"fmt"
	"os"
	"strings"
)

// GenerationAnnotation decides create / update / skip.
const GenerationAnnotation = "hyperfleet.io/generation"

func (v *validator) resource(doc *document, path string, r *Resource, sc, celScope scope) {
	switch r.Client() {
	case ClientKubernetes:
		if len(r.NestedDiscoveries) > 0 {
			v.errorf(doc, path+".nested_discoveries", "move the sub-resources into a ManifestWork with transport.client maestro, or discover them as resources of their own",
				"nested_discoveries only apply to the maestro transport")
		}
	case ClientMaestro:
		if r.Transport.Maestro == nil || r.Transport.Maestro.TargetCluster == "" {
			v.errorf(doc, path+".transport.maestro.target_cluster", "name the consumer cluster, e.g. target_cluster: \"{{ .placementClusterName }}\"",
				"the maestro transport needs a target_cluster")
		} else {
			v.template(doc, path+".transport.maestro.target_cluster", r.Transport.Maestro.TargetCluster, sc)
		}
	default:
		v.errorf(doc, path+".transport.client", "use kubernetes or maestro", "unknown transport client %q", r.Transport.Client)
	}
	v.manifest(doc, path+".manifest", r, sc)
	if r.Discovery != nil {
		v.discovery(doc, path+".discovery", r.Discovery, sc)
	}
	for j := range r.NestedDiscoveries {
		v.discovery(doc, fmt.Sprintf("%s.nested_discoveries[%d].discovery", path, j), &r.NestedDiscoveries[j].Discovery, sc)
	}
	if r.Lifecycle != nil {
		if c := r.Lifecycle.Create; c != nil {
			if c.When == nil || c.When.Expression == "" {
				v.errorf(doc, path+".lifecycle.create.when.expression", "set the CEL condition that allows creation", "lifecycle.create needs when.expression")
			} else {
				v.compile(doc, path+".lifecycle.create.when.expression", c.When.Expression, celScope)
			}
		}
		if d := r.Lifecycle.Delete; d != nil {
			if r.Discovery == nil {
				v.errorf(doc, path+".discovery", "add discovery (by_name or by_selectors) so the resource can be found to delete it", "lifecycle.delete needs discovery")
			}
			if d.When == nil || d.When.Expression == "" {
				v.errorf(doc, path+".lifecycle.delete.when.expression", `set the CEL condition, e.g. expression: "is_deleting"`, "lifecycle.delete needs when.expression")
			} else {
				v.compile(doc, path+".lifecycle.delete.when.expression", d.When.Expression, celScope)
			}
			switch d.PropagationPolicy {
			case "", PropagationBackground, PropagationForeground, PropagationOrphan:
			default:
				v.errorf(doc, path+".lifecycle.delete.propagationPolicy", "use Background, Foreground or Orphan", "unknown propagationPolicy %q", d.PropagationPolicy)
			}
		}
	}
}

func (v *validator) manifest(doc *document, path string, r *Resource, sc scope) {
	m := r.Manifest
	switch {
	case m.IsZero():
		v.errorf(doc, path, "add an inline manifest, a block scalar (manifest: |) or manifest.ref", "resource %q has no manifest", r.Name)
	case m.Ref != "":
		local, tried := ResolveRef(m.Ref, v.b.TaskFile, v.mounts)
		if local == "" {
			v.errorf(doc, path+".ref", "create the file, or map its directory with --ref-dir "+refMountHint(m.Ref), "manifest.ref %q not found (looked at %s)", m.Ref, strings.Join(tried, ", "))
			return
		}
		data, err := os.ReadFile(local)
		if err != nil {
			v.errorf(doc, path+".ref", "make the file readable", "manifest.ref %s: %v", local, err)
			return
		}
		v.b.Refs[m.Ref], v.b.RefFiles[m.Ref] = string(data), local
		refDoc := &document{file: local, lines: map[string]int{}}
		v.template(refDoc, "", string(data), sc)
		v.generationAnnotation(doc, path, strings.Contains(string(data), GenerationAnnotation), r)
	case m.Template != "":
		v.template(doc, path, m.Template, sc)
		v.generationAnnotation(doc, path, strings.Contains(m.Template, GenerationAnnotation), r)
	default:
		for _, key := range []string{"apiVersion", "kind", "metadata"} {
			if _, ok := m.Inline[key]; !ok {
				v.errorf(doc, path+"."+key, "add it", "the manifest has no %s", key)
			}
		}
		v.templatesIn(doc, path, m.Inline, sc)
		meta, _ := m.Inline["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		_, has := ann[GenerationAnnotation]
		v.generationAnnotation(doc, path, has, r)
	}
}

func refMountHint(ref string) string {
	if strings.HasPrefix(ref, "/") {
		return dirOf(ref) + "=<local dir>"
	}
	return "<mount>=<local dir>"
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

func (v *validator) generationAnnotation(doc *document, path string, present bool, r *Resource) {
	if !present {
		v.warnf(doc, path, `add metadata.annotations: {hyperfleet.io/generation: "{{ .generation }}"}`,
			"resource %q has no %s annotation: once it exists, spec changes are never applied to it", r.Name, GenerationAnnotation)
	}
}

func (v *validator) discovery(doc *document, path string, d *Discovery, sc scope) {
	switch {
	case d.ByName != "" && d.BySelectors != nil:
		v.errorf(doc, path, "keep one of them", "by_name and by_selectors are mutually exclusive")
	case d.ByName == "" && d.BySelectors == nil:
		v.errorf(doc, path, "set by_name or by_selectors.label_selector", "discovery finds nothing")
	case d.BySelectors != nil && len(d.BySelectors.LabelSelector) == 0:
		v.errorf(doc, path+".by_selectors.label_selector", "add at least one label", "an empty selector would match every object")
	}
	v.template(doc, path+".by_name", d.ByName, sc)
	v.template(doc, path+".namespace", d.Namespace, sc)
	if d.BySelectors != nil {
		for k, val := range d.BySelectors.LabelSelector {
			v.template(doc, path+".by_selectors.label_selector."+k, val, sc)
		}
	}
}

// templatesIn checks every string of an inline manifest.
func (v *validator) templatesIn(doc *document, path string, node any, sc scope) {
	switch x := node.(type) {
	case string:
		v.template(doc, path, x, sc)
	case []any:
		for i, e := range x {
			v.templatesIn(doc, fmt.Sprintf("%s[%d]", path, i), e, sc)
		}
	case map[string]any:
		for k, e := range x {
			v.template(doc, joinPath(path, k), k, sc)
			v.templatesIn(doc, joinPath(path, k), e, sc)
		}
	}
}
