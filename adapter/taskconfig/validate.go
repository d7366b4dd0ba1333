package taskconfig

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hyperfleet/hyperfleet/adapter/expr"
	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
	"github.com/hyperfleet/hyperfleet/adapter/template"
)

var (
	identifierRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	stepNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	adapterNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// Reserved names the engine defines itself.
var reserved = map[string]bool{expr.VarAdapter: true, expr.VarResources: true}

// Methods an api_call may use.
var methods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// Backoffs of retry_backoff.
var backoffs = map[string]bool{"": true, "exponential": true, "linear": true, "constant": true}

// GenerationAnnotation decides create / update / skip.
const GenerationAnnotation = "hyperfleet.io/generation"

type validator struct {
	b        *Bundle
	mounts   map[string]string
	cel      *expr.Engine
	tpl      *template.Renderer
	problems Problems
}

func newValidator(b *Bundle, mounts map[string]string) *validator {
	cel, err := expr.New(nil)
	if err != nil {
		panic(err) // the environment is static: a failure is a programming error
	}
	return &validator{b: b, mounts: mounts, cel: cel, tpl: template.New(nil)}
}

func (v *validator) errorf(doc *document, path, fix, format string, args ...any) {
	v.problems = append(v.problems, Problem{File: doc.file, Line: doc.line(path), Path: path, Message: fmt.Sprintf(format, args...), Fix: fix})
}

func (v *validator) warnf(doc *document, path, fix, format string, args ...any) {
	v.problems = append(v.problems, Problem{Severity: SeverityWarning, File: doc.file, Line: doc.line(path), Path: path, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// scope is the set of names an expression or template may read.
type scope map[string]bool

func (s scope) with(names ...string) scope {
	out := make(scope, len(s)+len(names))
	for k := range s {
		out[k] = true
	}
	for _, n := range names {
		if n != "" {
			out[n] = true
		}
	}
	return out
}

func (s scope) list() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (v *validator) run() Problems {
	if v.b.adapterDoc != nil {
		v.adapterConfig()
	}
	t, doc := v.b.Task, v.b.taskDoc
	sc := scope{expr.VarAdapter: true}

	// Params see the params before them.
	seen := map[string]bool{}
	for i := range t.Params {
		p := &t.Params[i]
		path := fmt.Sprintf("params[%d]", i)
		v.name(doc, path+".name", p.Name, identifierRE, seen, "param")
		v.param(doc, path, p, sc)
		sc = sc.with(p.Name)
	}

	// Preconditions see the params and what earlier preconditions captured.
	seenPre, seenCap := map[string]bool{}, map[string]bool{}
	for i := range t.Preconditions {
		pc := &t.Preconditions[i]
		path := fmt.Sprintf("preconditions[%d]", i)
		v.name(doc, path+".name", pc.Name, stepNameRE, seenPre, "precondition")
		sc = v.precondition(doc, path, pc, sc, seenCap)
	}

	// Resources see everything captured; lifecycle expressions also see
	// resources discovered before them.
	celScope := sc.with(expr.VarResources)
	seenRes := map[string]bool{}
	for i := range t.Resources {
		r := &t.Resources[i]
		path := fmt.Sprintf("resources[%d]", i)
		v.name(doc, path+".name", r.Name, identifierRE, seenRes, "resource")
		for j, nd := range r.NestedDiscoveries {
			v.name(doc, fmt.Sprintf("%s.nested_discoveries[%d].name", path, j), nd.Name, identifierRE, seenRes, "resource")
		}
		v.resource(doc, path, r, sc, celScope)
	}

	if t.Post != nil {
		v.post(doc, t.Post, sc, celScope)
	} else {
		v.warnf(doc, "post", "add post.payloads and a post_actions api_call that PUTs the status", "there is no post section: the adapter never reports status")
	}
	return v.problems
}

func (v *validator) adapterConfig() {
	a, doc := v.b.Adapter, v.b.adapterDoc
	switch {
	case a.Adapter.Name == "":
		v.errorf(doc, "adapter.name", "set adapter.name, e.g. landing-zone", "adapter.name is required")
	case len(a.Adapter.Name) > 63 || !adapterNameRE.MatchString(a.Adapter.Name):
		v.errorf(doc, "adapter.name", "use lowercase letters, digits and '-' (at most 63)", "adapter.name %q is not a valid name: it names task queues, labels and the %sSuccessful condition", a.Adapter.Name, "<Adapter>")
	}
	api := a.Clients.HyperFleetAPI
	if api.BaseURL != "" {
		if u, err := url.Parse(api.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			v.warnf(doc, "clients.hyperfleet_api.base_url", "set an absolute URL such as http://hyperfleet-api:8000, or pass --api-base-url to the worker",
				"%q is not an absolute URL; it must be overridden before the adapter runs", api.BaseURL)
		}
	}
	if !backoffs[api.RetryBackoff] {
		v.errorf(doc, "clients.hyperfleet_api.retry_backoff", "use exponential, linear or constant", "unknown retry_backoff %q", api.RetryBackoff)
	}
	if api.RetryAttempts < 0 {
		v.errorf(doc, "clients.hyperfleet_api.retry_attempts", "use 0 or more", "retry_attempts must not be negative")
	}
	if api.Auth != nil && api.Auth.TokenPath != "" && !strings.HasPrefix(api.Auth.TokenPath, "/") {
		v.errorf(doc, "clients.hyperfleet_api.auth.token_path", "use an absolute path", "token_path %q must be absolute", api.Auth.TokenPath)
	}
	if a.Clients.Broker != nil || a.Broker != nil {
		v.warnf(doc, "clients.broker", "remove it when no longer deploying upstream's broker adapter",
			"the broker section is ignored: Temporal delivers reconcile requests instead of a message broker")
	}
}

func (v *validator) name(doc *document, path, name string, re *regexp.Regexp, seen map[string]bool, what string) {
	switch {
	case name == "":
		v.errorf(doc, path, "give it a name", "%s name is required", what)
		return
	case !re.MatchString(name):
		v.errorf(doc, path, "use letters, digits and '_' (starting with a letter), so CEL and templates can refer to it",
			"%s name %q is not a valid identifier", what, name)
	case reserved[name]:
		v.errorf(doc, path, "rename it", "%q is reserved for the engine's own variables", name)
	}
	if seen[name] {
		v.errorf(doc, path, "use a unique name", "%s name %q is used twice", what, name)
	}
	seen[name] = true
}

func (v *validator) param(doc *document, path string, p *Param, sc scope) {
	s := p.Source
	set := 0
	for _, on := range []bool{s.Path != "", s.APICall != nil, s.Expression != "", s.File != nil} {
		if on {
			set++
		}
	}
	switch {
	case set == 0:
		v.errorf(doc, path+".source", "set source: event.<field>, env.<NAME>, secret.<ns>.<name>.<key>, configmap.<ns>.<name>.<key>, <param>.<path>, or a mapping with api_call, expression or file",
			"param %q has no source", p.Name)
	case set > 1:
		v.errorf(doc, path+".source", "keep one of them", "source sets more than one of path, api_call, expression and file")
	}
	switch p.Type {
	case "", TypeString, TypeInt, TypeInt64, TypeFloat, TypeFloat64, TypeBool:
	default:
		v.errorf(doc, path+".type", "use string, int, int64, float, float64 or bool", "unknown type %q", p.Type)
	}
	if p.Default != nil && p.Type != "" {
		if _, err := Convert(NormalizedCopy(p.Default), p.Type); err != nil {
			v.errorf(doc, path+".default", "make the default match the type", "default %v: %v", p.Default, err)
		}
	}
	switch {
	case s.Path != "":
		v.sourcePath(doc, path+".source", s.Path, sc)
	case s.APICall != nil:
		v.apiCall(doc, path+".source.api_call", s.APICall, sc)
	case s.Expression != "":
		v.compile(doc, path+".source.expression", s.Expression, sc)
	case s.File != nil:
		if !strings.HasPrefix(s.File.Path, "/") {
			v.errorf(doc, path+".source.file.path", "use an absolute path", "file path %q must be absolute", s.File.Path)
		}
	}
}

func (v *validator) sourcePath(doc *document, path, src string, sc scope) {
	head, rest, _ := strings.Cut(src, ".")
	switch head {
	case "event":
		if rest == "" {
			v.errorf(doc, path, "name a field of the event, e.g. event.id", "source %q names no event field", src)
		}
	case "env":
		if rest == "" {
			v.errorf(doc, path, "name a variable, e.g. env.REGION", "source %q names no environment variable", src)
		}
	case "secret", "configmap":
		if parts := strings.SplitN(rest, ".", 3); len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			v.errorf(doc, path, fmt.Sprintf("write %s.<namespace>.<name>.<key>", head), "source %q must name a namespace, a %s and a key", src, head)
		}
	default:
		if !sc[head] || reserved[head] {
			v.errorf(doc, path, "use event., env., secret., configmap., or the name of an earlier param",
				"source %q: %q is neither a source prefix nor a param defined before this one%s", src, head, suggest(head, sc))
			return
		}
		if rest != "" {
			if err := fieldpath.Validate(rest); err != nil {
				v.errorf(doc, path, "fix the path", "source %q: %v", src, err)
			}
		}
	}
}

func (v *validator) precondition(doc *document, path string, pc *Precondition, sc scope, seenCap map[string]bool) scope {
	if pc.APICall == nil && len(pc.Conditions) == 0 && pc.Expression == "" {
		v.errorf(doc, path, "add an api_call (with capture), conditions or an expression", "precondition %q checks nothing", pc.Name)
	}
	if pc.APICall != nil {
		v.apiCall(doc, path+".api_call", pc.APICall, sc)
		if !identifierRE.MatchString(pc.Name) {
			v.warnf(doc, path+".name", "use an identifier to read the response as "+strings.ReplaceAll(pc.Name, "-", "_"),
				"precondition %q calls the API but its name is not an identifier: CEL cannot read its response", pc.Name)
		}
	}
	if len(pc.Capture) > 0 && pc.APICall == nil {
		v.errorf(doc, path+".capture", "add an api_call to capture from, or derive the value in params", "capture needs an api_call response")
	}
	inner := sc
	if pc.APICall != nil {
		inner = inner.with(pc.Name)
	}
	for j := range pc.Capture {
		c := &pc.Capture[j]
		cp := fmt.Sprintf("%s.capture[%d]", path, j)
		switch {
		case c.Name == "":
			v.errorf(doc, cp+".name", "give the capture a name", "capture name is required")
		case !identifierRE.MatchString(c.Name) || reserved[c.Name]:
			v.errorf(doc, cp+".name", "use letters, digits and '_'", "capture name %q is not a valid identifier", c.Name)
		case seenCap[c.Name]:
			v.errorf(doc, cp+".name", "use a unique name", "capture %q is defined twice", c.Name)
		case sc[c.Name]:
			v.warnf(doc, cp+".name", "rename it if the shadowing is not intended", "capture %q replaces the param of the same name from here on", c.Name)
		}
		seenCap[c.Name] = true
		switch {
		case c.Field != "" && c.Expression != "":
			v.errorf(doc, cp, "keep one of them", "field and expression are mutually exclusive")
		case c.Field == "" && c.Expression == "":
			v.errorf(doc, cp, "set field (a path into the response) or expression (CEL over the response)", "capture %q extracts nothing", c.Name)
		case c.Field != "":
			if err := fieldpath.Validate(c.Field); err != nil {
				v.errorf(doc, cp+".field", "fix the path", "%v", err)
			}
		default:
			if _, err := v.cel.CompileOpen(c.Expression, []string{pc.Name}); err != nil {
				v.errorf(doc, cp+".expression", "check parentheses, quoting and optional chaining (?.)", "CEL does not compile:%s", indentMsg(err.Error()))
			}
		}
		inner = inner.with(c.Name)
	}
	for j := range pc.Conditions {
		v.condition(doc, fmt.Sprintf("%s.conditions[%d]", path, j), &pc.Conditions[j], inner)
	}
	if pc.Expression != "" {
		v.compile(doc, path+".expression", pc.Expression, inner)
	}
	return inner
}

func (v *validator) condition(doc *document, path string, c *Condition, sc scope) {
	if c.Field == "" {
		v.errorf(doc, path+".field", "name the variable to check", "condition field is required")
	} else if err := fieldpath.Validate(c.Field); err != nil {
		v.errorf(doc, path+".field", "fix the path", "%v", err)
	} else if head := strings.FieldsFunc(c.Field, func(r rune) bool { return r == '.' || r == '[' })[0]; !sc[head] {
		v.errorf(doc, path+".field", "use a param or a capture defined before this condition", "%q is not a param or capture in scope here%s", head, suggest(head, sc))
	}
	if !c.Operator.Known() {
		fix := "use one of " + strings.Join(operatorNames(), ", ")
		if s := closest(string(c.Operator), operatorNames()); s != "" {
			fix = fmt.Sprintf("did you mean %q?", s)
		}
		v.errorf(doc, path+".operator", fix, "invalid operator %q", c.Operator)
		return
	}
	switch c.Operator {
	case OpIn, OpNotIn:
		if _, ok := c.Value.([]any); !ok {
			v.errorf(doc, path+".value", `write a list, e.g. value: ["us-east-1", "us-west-2"]`, "%s needs an array value", c.Operator)
		}
	case OpExists, OpNotExists:
		if c.Value != nil {
			v.warnf(doc, path+".value", "remove it", "%s takes no value; it is ignored", c.Operator)
		}
	case OpGreaterThan, OpLessThan, OpGreaterThanOrEqual, OpLessThanOrEqual:
		if _, ok := Number(c.Value); !ok {
			v.errorf(doc, path+".value", "use a number", "%s needs a numeric value, got %v", c.Operator, c.Value)
		}
	default:
		if c.Value == nil {
			v.errorf(doc, path+".value", "set the value to compare with", "%s needs a value", c.Operator)
		}
	}
}

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

func (v *validator) apiCall(doc *document, path string, c *APICall, sc scope) {
	if c.Method != "" && !methods[strings.ToUpper(c.Method)] {
		v.errorf(doc, path+".method", "use GET, POST, PUT, PATCH or DELETE", "unknown method %q", c.Method)
	}
	if c.URL == "" {
		v.errorf(doc, path+".url", "set the URL, relative to the API (e.g. /clusters/{{ .clusterId }})", "api_call needs a url")
	}
	v.template(doc, path+".url", c.URL, sc)
	v.template(doc, path+".body", c.Body, sc)
	if !backoffs[c.RetryBackoff] {
		v.errorf(doc, path+".retry_backoff", "use exponential, linear or constant", "unknown retry_backoff %q", c.RetryBackoff)
	}
	if c.RetryAttempts != nil && *c.RetryAttempts < 0 {
		v.errorf(doc, path+".retry_attempts", "use 0 or more", "retry_attempts must not be negative")
	}
	if c.Timeout.Duration < 0 {
		v.errorf(doc, path+".timeout", "use a positive duration", "timeout must not be negative")
	}
	for i, h := range c.Headers {
		hp := fmt.Sprintf("%s.headers[%d]", path, i)
		if h.Name == "" {
			v.errorf(doc, hp+".name", "name the header", "header name is required")
		}
		v.template(doc, hp+".value", h.Value, sc)
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

func (v *validator) template(doc *document, path, text string, sc scope) {
	if !strings.Contains(text, "{{") {
		return
	}
	refs, err := v.tpl.References(text)
	if err != nil {
		v.errorf(doc, path, "fix the template syntax; functions are "+strings.Join(v.tpl.FuncNames(), ", "), "template does not parse: %v", err)
		return
	}
	for _, ref := range refs {
		if !sc[ref] {
			v.errorf(doc, path, "define it in params or captures, or fix the spelling",
				"template variable %q not found: it is not a param, capture or built-in in scope here%s", ref, suggest(ref, sc))
		}
	}
}

func (v *validator) compile(doc *document, path, src string, sc scope) {
	if strings.TrimSpace(src) == "" {
		v.errorf(doc, path, "write a CEL expression", "the expression is empty")
		return
	}
	if _, err := v.cel.Compile(src, sc.list()); err != nil {
		v.errorf(doc, path, "check the names (params, captures, resources, adapter), parentheses, quoting and optional chaining (?.)",
			"CEL does not compile:%s", indentMsg(err.Error()))
	}
}

func suggest(name string, sc scope) string {
	if s := closest(name, sc.list()); s != "" && s != name {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

func indentMsg(s string) string {
	return " " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n      ")
}
