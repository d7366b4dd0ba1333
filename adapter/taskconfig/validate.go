package taskconfig

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/expr"
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
