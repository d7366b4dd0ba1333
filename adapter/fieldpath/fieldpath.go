// Package fieldpath extracts a value from decoded JSON by a dotted path
// ("status.conditions[0].type", "items.0.name") or by a Kubernetes JSONPath
// ("{.items[?(@.adapter=='landing-zone')].data.namespace.status}").
package fieldpath

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// IsJSONPath tells the two syntaxes apart: JSONPath starts with "{" or "$".
func IsJSONPath(path string) bool {
	p := strings.TrimSpace(path)
	return strings.HasPrefix(p, "{") || strings.HasPrefix(p, "$")
}

// Validate reports a syntax error in a path.
func Validate(path string) error {
	if strings.TrimSpace(path) == "" {
		return fmt.Errorf("the path is empty")
	}
	if IsJSONPath(path) {
		_, err := compile(path)
		return err
	}
	_, err := splitDotted(path)
	return err
}

// Get extracts the value at path. found is false when nothing matches. A
// JSONPath matching several values yields them as a list.
func Get(data any, path string) (value any, found bool, err error) {
	if !IsJSONPath(path) {
		segs, err := splitDotted(path)
		if err != nil {
			return nil, false, err
		}
		v, ok := walk(data, segs)
		return v, ok, nil
	}
	jp, err := compile(path)
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if r := recover(); r != nil {
			value, found, err = nil, false, fmt.Errorf("jsonpath %s: %v", path, r)
		}
	}()
	results, err := jp.FindResults(data)
	if err != nil {
		return nil, false, fmt.Errorf("jsonpath %s: %w", path, err)
	}
	var out []any
	for _, set := range results {
		for _, rv := range set {
			out = append(out, unwrap(rv))
		}
	}
	switch len(out) {
	case 0:
		return nil, false, nil
	case 1:
		return out[0], true, nil
	}
	return out, true, nil
}

func compile(path string) (*jsonpath.JSONPath, error) {
	p := strings.TrimSpace(path)
	if strings.HasPrefix(p, "$") {
		p = "{" + p + "}"
	}
	jp := jsonpath.New("field").AllowMissingKeys(true)
	if err := jp.Parse(p); err != nil {
		return nil, fmt.Errorf("invalid JSONPath %s: %w", path, err)
	}
	// A dry execution catches template-level mistakes the parser accepts.
	var buf bytes.Buffer
	_ = jp.Execute(&buf, map[string]any{})
	return jp, nil
}

func unwrap(rv reflect.Value) any {
	for rv.IsValid() && (rv.Kind() == reflect.Interface || rv.Kind() == reflect.Pointer) {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil
	}
	return rv.Interface()
}

// splitDotted reads a.b[0].c and a.b.0.c into segments.
func splitDotted(path string) ([]string, error) {
	var segs []string
	for _, part := range strings.Split(strings.TrimSpace(path), ".") {
		if part == "" {
			return nil, fmt.Errorf("path %q has an empty segment", path)
		}
		for part != "" {
			open := strings.IndexByte(part, '[')
			if open < 0 {
				segs = append(segs, part)
				break
			}
			if open > 0 {
				segs = append(segs, part[:open])
			}
			end := strings.IndexByte(part[open:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q has an unclosed '['", path)
			}
			idx := strings.Trim(part[open+1:open+end], `'"`)
			if idx == "" {
				return nil, fmt.Errorf("path %q has an empty index", path)
			}
			segs = append(segs, idx)
			part = part[open+end+1:]
		}
	}
	return segs, nil
}

func walk(v any, segs []string) (any, bool) {
	cur := v
	for _, seg := range segs {
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
