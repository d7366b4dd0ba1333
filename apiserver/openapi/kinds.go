package openapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hyperfleet/hyperfleet/resource"
)

// The hand-written document describes Cluster (a kind without parent) and
// NodePool (a child of Cluster). Every kind of a kinds table is described
// by copying one of the two, renamed: the paths, the path parameter and the
// per-kind schemas below.
var (
	rootPaths = []string{
		"/clusters", "/clusters/{cluster_id}", "/clusters/{cluster_id}/force-delete", "/clusters/{cluster_id}/statuses",
		"/clusters/{cluster_id}/reconciliation", "/clusters/{cluster_id}/tenancy",
	}
	childPaths = []string{
		"/nodepools", "/clusters/{cluster_id}/nodepools", "/clusters/{cluster_id}/nodepools/{nodepool_id}",
		"/clusters/{cluster_id}/nodepools/{nodepool_id}/force-delete", "/clusters/{cluster_id}/nodepools/{nodepool_id}/statuses",
		"/clusters/{cluster_id}/nodepools/{nodepool_id}/reconciliation",
	}
	rootSchemas  = []string{"Cluster", "ClusterList", "ClusterCreateRequest"}
	childSchemas = []string{"NodePool", "NodePoolList", "NodePoolCreateRequest"}
)

// DocumentFor returns the OpenAPI document, as JSON, of an API serving a
// kinds table. For the default kinds it is Document, unchanged.
func DocumentFor(kinds *resource.Kinds) ([]byte, error) {
	raw, err := Document()
	if err != nil {
		return nil, err
	}
	if isDefault(kinds) {
		return raw, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	params, _ := components["parameters"].(map[string]any)
	if paths == nil || schemas == nil || params == nil {
		return nil, fmt.Errorf("openapi.yaml: paths, components.schemas or components.parameters missing")
	}
	template := map[string]any{}
	for _, p := range append(append([]string{}, rootPaths...), childPaths...) {
		template[p] = paths[resource.BasePath+p]
		delete(paths, resource.BasePath+p)
	}
	for _, s := range append(append([]string{}, rootSchemas...), childSchemas...) {
		template["schema:"+s] = schemas[s]
		delete(schemas, s)
	}
	param := params["cluster_id"]
	delete(params, "cluster_id")
	delete(params, "nodepool_id")

	for _, k := range kinds.All() {
		r := renamer(kinds, k)
		names, schemaNames := rootPaths, rootSchemas
		if k.ParentKind != "" {
			names, schemaNames = childPaths, childSchemas
		}
		for _, p := range names {
			var item any
			if err := r.copy(template[p], &item); err != nil {
				return nil, err
			}
			paths[resource.BasePath+r.text(p)] = item
		}
		for _, s := range schemaNames {
			var schema any
			if err := r.copy(template["schema:"+s], &schema); err != nil {
				return nil, err
			}
			schemas[r.text(s)] = schema
		}
		if create, ok := schemas[k.Kind+"CreateRequest"].(map[string]any); ok {
			if props, ok := create["properties"].(map[string]any); ok {
				if name, ok := props["name"].(map[string]any); ok {
					name["minLength"], name["maxLength"] = k.NameMinLen, k.NameMaxLen
				}
			}
		}
		var p any
		if err := r.copy(param, &p); err != nil {
			return nil, err
		}
		if m, ok := p.(map[string]any); ok {
			m["name"] = idName(k.Kind)
		}
		params[idName(k.Kind)] = p
	}
	return json.Marshal(doc)
}

func isDefault(kinds *resource.Kinds) bool {
	names := kinds.Names()
	if len(names) != 2 {
		return false
	}
	for _, n := range names {
		if !kinds.IsDefault(n) {
			return false
		}
	}
	return true
}

func idName(kind string) string { return strings.ToLower(kind) + "_id" }

// rename maps the words of the template kinds to those of one kind. It
// goes through placeholders so a kind whose own name holds "cluster" is
// not renamed twice.
type rename struct{ from, via, to []string }

func renamer(kinds *resource.Kinds, k resource.Kind) rename {
	var r rename
	add := func(from, to string) {
		r.from = append(r.from, from)
		r.via = append(r.via, fmt.Sprintf("\x00%d\x00", len(r.via)))
		r.to = append(r.to, to)
	}
	lower := strings.ToLower(k.Kind)
	if k.ParentKind != "" {
		parent, _ := kinds.Get(k.ParentKind)
		add("nodepools", k.Plural)
		add("nodepool", lower)
		add("NodePool", k.Kind)
		add("node pools", k.Plural)
		add("node pool", lower)
		add("clusters", parent.Plural)
		add("cluster", strings.ToLower(parent.Kind))
		add("Cluster", parent.Kind)
		return r
	}
	add("clusters", k.Plural)
	add("cluster", lower)
	add("Cluster", k.Kind)
	return r
}

func (r rename) text(s string) string {
	for i := range r.from {
		s = strings.ReplaceAll(s, r.from[i], r.via[i])
	}
	for i := range r.via {
		s = strings.ReplaceAll(s, r.via[i], r.to[i])
	}
	return s
}

// copy renames a template value by way of its JSON text.
func (r rename) copy(v any, out *any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(r.text(string(raw))), out)
}
