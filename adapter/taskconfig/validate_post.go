package taskconfig

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
)

func (v *validator) post(doc *document, p *Post, sc, celScope scope) {
	seen := map[string]bool{}
	tplScope := sc
	for i := range p.Payloads {
		pl := &p.Payloads[i]
		path := fmt.Sprintf("post.payloads[%d]", i)
		v.name(doc, path+".name", pl.Name, identifierRE, seen, "payload")
		if pl.When != nil {
			v.compile(doc, path+".when.expression", pl.When.Expression, celScope)
		}
		switch {
		case pl.Build != nil && pl.BuildRef != "":
			v.errorf(doc, path, "keep one of them", "build and build_ref are mutually exclusive")
		case pl.Build == nil && pl.BuildRef == "":
			v.errorf(doc, path, "add build (the payload) or build_ref (a file holding it)", "payload %q builds nothing", pl.Name)
		case pl.Build != nil:
			v.build(doc, path+".build", NormalizedCopy(pl.Build), tplScope, celScope)
		default:
			v.buildRef(doc, path+".build_ref", pl, tplScope, celScope)
		}
		tplScope = tplScope.with(pl.Name)
	}
	seenActions := map[string]bool{}
	for i := range p.PostActions {
		pa := &p.PostActions[i]
		path := fmt.Sprintf("post.post_actions[%d]", i)
		v.name(doc, path+".name", pa.Name, stepNameRE, seenActions, "post action")
		if pa.When != nil {
			v.compile(doc, path+".when.expression", pa.When.Expression, celScope)
		}
		if pa.APICall == nil {
			v.errorf(doc, path+".api_call", "add the api_call to run (e.g. the PUT of the status)", "post action %q does nothing", pa.Name)
			continue
		}
		v.apiCall(doc, path+".api_call", pa.APICall, tplScope)
	}
}

func (v *validator) buildRef(doc *document, path string, pl *Payload, tplScope, celScope scope) {
	local, tried := ResolveRef(pl.BuildRef, v.b.TaskFile, v.mounts)
	if local == "" {
		v.errorf(doc, path, "create the file or map its directory with --ref-dir", "build_ref %q not found (looked at %s)", pl.BuildRef, strings.Join(tried, ", "))
		return
	}
	data, err := os.ReadFile(local)
	if err != nil {
		v.errorf(doc, path, "make the file readable", "build_ref %s: %v", local, err)
		return
	}
	var build map[string]any
	if err := yaml.Unmarshal(data, &build); err != nil {
		v.errorf(doc, path, "fix the YAML", "build_ref %s is not a YAML mapping: %v", local, err)
		return
	}
	v.b.Refs[pl.BuildRef], v.b.RefFiles[pl.BuildRef] = string(data), local
	v.build(&document{file: local, lines: map[string]int{}}, "", NormalizedCopy(build), tplScope, celScope)
}

// build checks a payload tree: strings are templates, {expression} is CEL,
// {field, default} a path.
func (v *validator) build(doc *document, path string, node any, tplScope, celScope scope) {
	switch x := node.(type) {
	case string:
		v.template(doc, path, x, tplScope)
	case []any:
		for i, e := range x {
			v.build(doc, fmt.Sprintf("%s[%d]", path, i), e, tplScope, celScope)
		}
	case map[string]any:
		switch kind, spec := ValueSpec(x); kind {
		case SpecExpression:
			s, ok := spec.(string)
			if !ok {
				v.errorf(doc, joinPath(path, "expression"), "write the CEL as a string", "expression must be a string")
				return
			}
			v.compile(doc, joinPath(path, "expression"), s, celScope)
		case SpecField:
			s, ok := spec.(string)
			if !ok {
				v.errorf(doc, joinPath(path, "field"), "write the path as a string", "field must be a string")
				return
			}
			if err := fieldpath.Validate(s); err != nil {
				v.errorf(doc, joinPath(path, "field"), "fix the path", "%v", err)
			}
		default:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v.build(doc, joinPath(path, k), x[k], tplScope, celScope)
			}
		}
	}
}

// Value spec kinds inside a payload build.
const (
	SpecNone = iota
	SpecExpression
	SpecField
)

// ValueSpec recognises {expression: ...} and {field: ..., default: ...}
// nodes of a payload; any other mapping is a nested object.
func ValueSpec(m map[string]any) (int, any) {
	if len(m) == 0 || len(m) > 2 {
		return SpecNone, nil
	}
	if e, ok := m["expression"]; ok {
		if _, hasDefault := m["default"]; len(m) == 1 || hasDefault {
			return SpecExpression, e
		}
	}
	if f, ok := m["field"]; ok {
		if _, hasDefault := m["default"]; len(m) == 1 || hasDefault {
			return SpecField, f
		}
	}
	return SpecNone, nil
}
