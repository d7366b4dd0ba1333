// The searchable fields: resolving a name from the query to a scalar
// column, a label key, a spec path or a condition type.

package search

import (
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// fieldKind is the type of a searchable field.
type fieldKind int

const (
	textField fieldKind = iota
	intField
	timeField
	labelField
	specField
	conditionField
	referenceField
)

type field struct {
	name   string // as written in the query, for messages
	kind   fieldKind
	column string   // qualified column for scalar fields
	key    string   // label key
	path   []string // spec path
	cond   string   // condition type
	// refType is the reference type of references.<type>.id; "" for
	// references.id, a link of any type.
	refType string
}

var scalarFields = map[string]struct {
	column string
	kind   fieldKind
}{
	"id":           {"id", textField},
	"name":         {"name", textField},
	"generation":   {"generation", intField},
	"created_time": {"created_time", timeField},
	"updated_time": {"updated_time", timeField},
	"deleted_time": {"deleted_time", timeField},
	"created_by":   {"created_by", textField},
	"updated_by":   {"updated_by", textField},
}

var (
	conditionTypePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	specSegmentPattern   = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)
)

func (t *translator) resolve(name string) (field, error) {
	f, err := t.resolveField(name)
	if err == nil && t.opts.Disallowed != nil && (t.opts.Disallowed(name) || f.kind == labelField && t.opts.Disallowed("labels."+f.key)) {
		return field{}, errorf("%s is not searchable here: the kind's search_disallowed_fields keep it out of searches", name)
	}
	return f, err
}

func (t *translator) resolveField(name string) (field, error) {
	if s, ok := scalarFields[name]; ok {
		return field{name: name, kind: s.kind, column: t.opts.Table + "." + s.column}, nil
	}
	switch {
	case name == "kind":
		if !t.opts.Kind {
			return field{}, errorf("kind is only searchable on /resources; a list of one kind holds nothing else")
		}
		return field{name: name, kind: textField, column: t.opts.Table + ".kind"}, nil
	case name == "owner_references.id":
		if !t.opts.OwnerReferences {
			return field{}, errorf("owner_references.id is only searchable on node pools")
		}
		return field{name: name, kind: textField, column: t.opts.Table + ".parent_id"}, nil
	case strings.HasPrefix(name, "labels.") || strings.HasPrefix(name, "labels["):
		key, err := labelKey(name)
		if err != nil {
			return field{}, err
		}
		return field{name: name, kind: labelField, key: key}, nil
	case strings.HasPrefix(name, "spec.") || strings.HasPrefix(name, "spec["):
		path, err := specPath(name)
		if err != nil {
			return field{}, err
		}
		return field{name: name, kind: specField, path: path}, nil
	case strings.HasPrefix(name, "references."):
		return t.referenceField(name)
	case strings.HasPrefix(name, "status.conditions."):
		ct := strings.TrimPrefix(name, "status.conditions.")
		if !conditionTypePattern.MatchString(ct) {
			return field{}, errorf("%q is not a condition type; use status.conditions.<Type>, e.g. status.conditions.Ready", ct)
		}
		return field{name: name, kind: conditionField, cond: ct}, nil
	}
	return field{}, errorf("unknown field %q; searchable fields are id, name, generation, created_time, updated_time, deleted_time, created_by, updated_by, labels.<key>, spec.<path>, status.conditions.<Type>, references.id, references.<ref_type>.id%s",
		name, map[bool]string{true: ", owner_references.id", false: ""}[t.opts.OwnerReferences])
}

// referenceField resolves references.id (a link of any type to the
// target) and references.<ref_type>.id; a ref_type the kind does not
// declare is refused, so a typo is not an empty page.
func (t *translator) referenceField(name string) (field, error) {
	if t.opts.RefTypes != nil && len(t.opts.RefTypes) == 0 {
		return field{}, errorf("%s: this kind declares no references", name)
	}
	rest := strings.TrimPrefix(name, "references.")
	if rest == "id" {
		return field{name: name, kind: referenceField}, nil
	}
	refType, ok := strings.CutSuffix(rest, ".id")
	if !ok || !specSegmentPattern.MatchString(refType) {
		return field{}, errorf("%q: find referrers by the target's id, as references.id (a link of any type) or references.<ref_type>.id, e.g. references.wif_config.id = '<id>'", name)
	}
	if t.opts.RefTypes != nil && !slices.Contains(t.opts.RefTypes, refType) {
		return field{}, errorf("%s: this kind declares no reference %q; its ref_types are %s", name, refType, strings.Join(t.opts.RefTypes, ", "))
	}
	return field{name: name, kind: referenceField, refType: refType}, nil
}

func labelKey(name string) (string, error) {
	var key string
	if strings.HasPrefix(name, "labels[") {
		if !strings.HasSuffix(name, "]") {
			return "", errorf("%q: close the bracket, e.g. labels['cost-center']", name)
		}
		key = unquote(name[len("labels[") : len(name)-1])
	} else {
		key = strings.TrimPrefix(name, "labels.")
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "", errorf("%q is not a valid label key: %s", key, strings.Join(errs, "; "))
	}
	return key, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'' || s[0] == '"' && s[len(s)-1] == '"') {
		return s[1 : len(s)-1]
	}
	return s
}

// specPath splits spec.a.b[0]['c-d'] into [a b 0 c-d].
func specPath(name string) ([]string, error) {
	rest := strings.TrimPrefix(name, "spec")
	var path []string
	for rest != "" {
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			path = append(path, rest[1:1+end])
			rest = rest[1+end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, errorf("%q: close the bracket, e.g. spec['node-count']", name)
			}
			path = append(path, unquote(rest[1:end]))
			rest = rest[end+1:]
		default:
			return nil, errorf("%q is not a spec path; write spec.<field>[.<field>...], e.g. spec.platform.type", name)
		}
	}
	if len(path) == 0 {
		return nil, errorf("spec needs a path, e.g. spec.platform.type")
	}
	for _, seg := range path {
		if !specSegmentPattern.MatchString(seg) {
			return nil, errorf("%q: spec path segment %q may only hold letters, digits, '_' and '-'", name, seg)
		}
	}
	return path, nil
}
