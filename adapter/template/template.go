// Package template renders the Go templates of adapter task configs (URLs,
// manifests, payload strings) with a small, documented function set, and
// lists the variables a template reads so validation can catch typos.
package template

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	gotemplate "text/template"
	"text/template/parse"
	"time"
)

// Renderer renders templates; it caches parsed templates and is safe for
// concurrent use.
type Renderer struct {
	now   func() time.Time
	funcs gotemplate.FuncMap

	mu    sync.Mutex
	cache map[string]*gotemplate.Template
}

// New returns a renderer whose now function uses the given clock
// (time.Now when nil).
func New(now func() time.Time) *Renderer {
	if now == nil {
		now = time.Now
	}
	r := &Renderer{now: now, cache: map[string]*gotemplate.Template{}}
	r.funcs = r.funcMap()
	return r
}

// FuncNames lists the template functions, for documentation and errors.
func (r *Renderer) FuncNames() []string {
	names := make([]string, 0, len(r.funcs))
	for n := range r.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Parse compiles a template; errors name the problem and its position.
func (r *Renderer) Parse(text string) (*gotemplate.Template, error) {
	r.mu.Lock()
	t, ok := r.cache[text]
	r.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := gotemplate.New("t").Option("missingkey=error").Funcs(r.funcs).Parse(text)
	if err != nil {
		return nil, cleanError(err)
	}
	r.mu.Lock()
	r.cache[text] = t
	r.mu.Unlock()
	return t, nil
}

// Render executes text against data. A reference to a missing variable is
// an error, not "<no value>".
func (r *Renderer) Render(text string, data map[string]any) (out string, err error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := r.Parse(text)
	if err != nil {
		return "", err
	}
	defer func() {
		if rec := recover(); rec != nil {
			out, err = "", fmt.Errorf("template panicked: %v", rec)
		}
	}()
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", cleanError(err)
	}
	return b.String(), nil
}

// cleanError drops text/template's internal template name.
func cleanError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "template: ")
	msg = strings.TrimPrefix(msg, "t:")
	msg = strings.ReplaceAll(msg, `executing "t" at `, "at ")
	msg = strings.ReplaceAll(msg, "map has no entry for key", "no variable named")
	return fmt.Errorf("%s", strings.TrimSpace(msg))
}

// JSON wraps a value that renders as JSON text inside a template (a built
// payload in a post action's body).
type JSON struct{ V any }

func (j JSON) String() string {
	b, err := json.Marshal(j.V)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// Data prepares template data: nil values become "" so an absent optional
// value renders as nothing rather than "<no value>".
func Data(vars map[string]any) map[string]any {
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		out[k] = blankNil(v)
	}
	return out
}

func blankNil(v any) any {
	switch x := v.(type) {
	case nil:
		return ""
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = blankNil(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = blankNil(e)
		}
		return l
	}
	return v
}

// References lists the top-level variables a template reads ({{ .a.b }} and
// {{ $.a }} read "a"); fields inside range/with blocks are relative to the
// block and not listed.
func (r *Renderer) References(text string) ([]string, error) {
	if !strings.Contains(text, "{{") {
		return nil, nil
	}
	t, err := r.Parse(text)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var walk func(n parse.Node, root bool)
	walk = func(n parse.Node, root bool) {
		switch x := n.(type) {
		case *parse.ListNode:
			if x == nil {
				return
			}
			for _, c := range x.Nodes {
				walk(c, root)
			}
		case *parse.ActionNode:
			walk(x.Pipe, root)
		case *parse.PipeNode:
			if x == nil {
				return
			}
			for _, c := range x.Cmds {
				walk(c, root)
			}
		case *parse.CommandNode:
			for _, a := range x.Args {
				walk(a, root)
			}
		case *parse.FieldNode:
			if root && len(x.Ident) > 0 {
				seen[x.Ident[0]] = true
			}
		case *parse.ChainNode:
			walk(x.Node, root)
		case *parse.VariableNode:
			if len(x.Ident) > 1 && x.Ident[0] == "$" {
				seen[x.Ident[1]] = true
			}
		case *parse.IfNode:
			walk(x.Pipe, root)
			walk(x.List, root)
			walk(x.ElseList, root)
		case *parse.RangeNode:
			walk(x.Pipe, root)
			walk(x.List, false)
			walk(x.ElseList, root)
		case *parse.WithNode:
			walk(x.Pipe, root)
			walk(x.List, false)
			walk(x.ElseList, root)
		case *parse.TemplateNode:
			walk(x.Pipe, root)
		}
	}
	walk(t.Tree.Root, true)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

func (r *Renderer) funcMap() gotemplate.FuncMap {
	return gotemplate.FuncMap{
		"now":        func() time.Time { return r.now().UTC() },
		"date":       date,
		"lower":      strings.ToLower,
		"upper":      strings.ToUpper,
		"trim":       strings.TrimSpace,
		"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"replace":    func(from, to string, s any) string { return strings.ReplaceAll(toString(s), from, to) },
		"contains":   func(sub string, s any) bool { return strings.Contains(toString(s), sub) },
		"hasPrefix":  func(prefix string, s any) bool { return strings.HasPrefix(toString(s), prefix) },
		"hasSuffix":  func(suffix string, s any) bool { return strings.HasSuffix(toString(s), suffix) },
		"default":    defaultValue,
		"quote":      func(v any) string { return strconv.Quote(toString(v)) },
		"squote":     func(v any) string { return "'" + toString(v) + "'" },
		"int":        toInt,
		"int64":      toInt,
		"float64":    toFloat,
		"string":     toString,
		"toJson":     func(v any) string { return JSON{V: v}.String() },
		"b64enc":     func(v any) string { return base64.StdEncoding.EncodeToString([]byte(toString(v))) },
		"b64dec": func(v any) (string, error) {
			b, err := base64.StdEncoding.DecodeString(toString(v))
			return string(b), err
		},
		"sha256sum": func(v any) string { s := sha256.Sum256([]byte(toString(v))); return hex.EncodeToString(s[:]) },
		"trunc": func(n int, v any) string {
			s := toString(v)
			if n >= 0 && len(s) > n {
				return s[:n]
			}
			return s
		},
		"join":    func(sep string, v any) string { return strings.Join(toStrings(v), sep) },
		"split":   func(sep string, v any) []string { return strings.Split(toString(v), sep) },
		"indent":  func(n int, v any) string { return indent(n, toString(v)) },
		"nindent": func(n int, v any) string { return "\n" + indent(n, toString(v)) },
	}
}

// date formats a time (time.Time, RFC 3339 text or Unix seconds) with a Go
// layout: {{ now | date "2006-01-02T15:04:05Z07:00" }}.
func date(layout string, v any) (string, error) {
	switch t := v.(type) {
	case time.Time:
		return t.Format(layout), nil
	case *time.Time:
		return t.Format(layout), nil
	case string:
		parsed, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return "", fmt.Errorf("date: %q is not an RFC 3339 time", t)
		}
		return parsed.Format(layout), nil
	case int, int64, float64:
		return time.Unix(toInt(t), 0).UTC().Format(layout), nil
	}
	return "", fmt.Errorf("date: cannot format %T", v)
}

// defaultValue returns v unless it is empty: {{ .region | default "us-east-1" }}.
func defaultValue(def any, v ...any) any {
	if len(v) == 0 || isEmpty(v[0]) {
		return def
	}
	return v[0]
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case map[string]any, []any:
		return JSON{V: x}.String()
	}
	return fmt.Sprint(v)
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = toString(e)
		}
		return out
	}
	return []string{toString(v)}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case int32:
		return int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(x)
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return int64(f)
		}
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case string:
		f, _ := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f
	}
	return 0
}

func indent(n int, s string) string {
	if n < 0 {
		n = 0
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}
