// Package kindsfile reads a kinds file: YAML with an entities: list in
// upstream HyperFleet's field names. It lives apart from package resource so
// that package, which adapters import, keeps to the standard library.
package kindsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/hyperfleet/hyperfleet/resource"
)

// MaxSize bounds a kinds file: a table of kinds is small, and a file far
// larger is not one.
const MaxSize = 1 << 20

// Table is a loaded kinds file.
type Table struct {
	*resource.Kinds
	// Warnings name fields this version does not know (upstream may add
	// some); they are ignored, not fatal, so an upstream file still loads.
	Warnings []string
}

// Load reads and validates a kinds file.
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kinds file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("kinds file %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, &resource.KindError{File: path, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxSize), Fix: "a kinds file lists kinds, nothing else"}
	}
	return Parse(path, data)
}

// Parse validates the content of a kinds file; name is used in errors.
func Parse(name string, data []byte) (*Table, error) {
	fail := func(line int, fix, format string, args ...any) error {
		return &resource.KindError{File: name, Line: line, Msg: fmt.Sprintf(format, args...), Fix: fix}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fail(0, "list the kinds under entities:", "the file is empty")
		}
		return nil, fail(0, "fix the YAML syntax", "not YAML: %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fail(extra.Line, "keep the kinds in one YAML document", "the file holds more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fail(root.Line, "start the file with entities:", "the top level is not a mapping")
	}
	t := &Table{}
	var entities *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		if key.Value == "entities" {
			entities = val
			continue
		}
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s:%d: top-level field %q is not used", name, key.Line, key.Value))
	}
	if entities == nil {
		return nil, fail(root.Line, "list the kinds under entities:", "the file has no entities: list")
	}
	if entities.Kind != yaml.SequenceNode {
		return nil, fail(entities.Line, "make entities a list, one item per kind", "entities is not a list")
	}
	kinds := make([]resource.Kind, 0, len(entities.Content))
	for _, n := range entities.Content {
		k, err := decodeKind(name, n, t)
		if err != nil {
			return nil, err
		}
		kinds = append(kinds, k)
	}
	table, err := resource.NewKinds(name, kinds)
	if err != nil {
		return nil, err
	}
	t.Kinds = table
	return t, nil
}

// kindFields are the fields of one entity, decoded strictly by type.
// required_adapters and conditions are read from their nodes: upstream has
// written each in two forms.
type kindFields struct {
	Kind                   string          `yaml:"kind"`
	Plural                 string          `yaml:"plural"`
	ParentKind             string          `yaml:"parent_kind"`
	OnParentDelete         string          `yaml:"on_parent_delete"`
	OptionalAdapters       []string        `yaml:"optional_adapters"`
	NameMinLen             int             `yaml:"name_min_len"`
	NameMaxLen             int             `yaml:"name_max_len"`
	SpecSchemaName         string          `yaml:"spec_schema_name"`
	RequireSpecSchema      bool            `yaml:"require_spec_schema"`
	References             []referenceSpec `yaml:"references"`
	SearchDisallowedFields []string        `yaml:"search_disallowed_fields"`
}

type referenceSpec struct {
	RefType    string `yaml:"ref_type"`
	TargetKind string `yaml:"target_kind"`
	Min        int    `yaml:"min"`
	Max        int    `yaml:"max"`
}

type conditionSpec struct {
	Type       string `yaml:"type"`
	Expression string `yaml:"expression"`
	Reason     string `yaml:"reason"`
	Message    string `yaml:"message"`
}

// known lists every field of upstream's entity descriptor (each honoured)
// and optional_adapters, this project's own.
var known = map[string]bool{
	"kind": true, "plural": true, "parent_kind": true, "on_parent_delete": true, "required_adapters": true,
	"optional_adapters": true, "name_min_len": true, "name_max_len": true, "spec_schema_name": true,
	"require_spec_schema": true, "references": true, "conditions": true, "search_disallowed_fields": true,
}

func decodeKind(name string, n *yaml.Node, t *Table) (resource.Kind, error) {
	fail := func(line int, fix, format string, args ...any) error {
		return &resource.KindError{File: name, Line: line, Msg: fmt.Sprintf(format, args...), Fix: fix}
	}
	if n.Kind != yaml.MappingNode {
		return resource.Kind{}, fail(n.Line, "write each kind as a mapping (kind: ..., plural: ...)", "an entities item is not a mapping")
	}
	var f kindFields
	if err := n.Decode(&f); err != nil {
		return resource.Kind{}, fail(n.Line, "check the field types against the operator guide", "kind fields do not decode: %v", err)
	}
	k := resource.Kind{
		Kind: f.Kind, Plural: f.Plural, ParentKind: f.ParentKind, OnParentDelete: f.OnParentDelete,
		NameMinLen: f.NameMinLen, NameMaxLen: f.NameMaxLen, SpecSchemaName: f.SpecSchemaName,
		RequireSpecSchema: f.RequireSpecSchema, Line: n.Line,
		OptionalAdapters: f.OptionalAdapters, SearchDisallowedFields: f.SearchDisallowedFields,
	}
	warn := func(line int, format string, args ...any) {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s:%d: ", name, line)+fmt.Sprintf(format, args...))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if !known[key.Value] {
			warn(key.Line, "field %q of kind %s is not used", key.Value, f.Kind)
		}
		switch key.Value {
		case "required_adapters":
			// Present, even as [], is a decision; absent leaves it to the
			// HYPERFLEET_<KIND>_ADAPTERS variable, then to none.
			names, err := adapterNames(val, key.Line, f.Kind, warn)
			if err != nil {
				return resource.Kind{}, fail(val.Line, "list the adapter names: required_adapters: [validation, dns]", "required_adapters of kind %s: %v", f.Kind, err)
			}
			k.RequiredAdapters = names
		case "conditions":
			rules, err := conditionRules(val, f.Kind, warn)
			if err != nil {
				return resource.Kind{}, fail(val.Line, "write conditions as a list of {type, expression, reason, message}", "conditions of kind %s do not decode: %v", f.Kind, err)
			}
			k.Conditions = rules
		case "references":
			for j, r := range f.References {
				line := val.Line
				if j < len(val.Content) {
					line = val.Content[j].Line
				}
				k.References = append(k.References, resource.Reference{RefType: r.RefType, TargetKind: r.TargetKind, Min: r.Min, Max: r.Max, Line: line})
			}
		}
	}
	return k, nil
}

// adapterNames reads required_adapters: a list of names, or the mapping of
// names to service URLs an earlier upstream release used. The names are
// what counts; Temporal routes each adapter's work to its own task queue,
// so the URLs have no use here and a warning says so.
func adapterNames(val *yaml.Node, line int, kind string, warn func(int, string, ...any)) ([]string, error) {
	switch val.Kind {
	case yaml.MappingNode:
		names := make([]string, 0, len(val.Content)/2)
		for i := 0; i+1 < len(val.Content); i += 2 {
			names = append(names, val.Content[i].Value)
		}
		warn(line, "required_adapters of kind %s maps adapter names to URLs (an earlier upstream form): the names %v are required, the URLs are not used (each adapter's work goes to Temporal task queue hyperfleet-adapter-<name>)", kind, names)
		return names, nil
	case yaml.ScalarNode:
		if val.Tag == "!!null" {
			return []string{}, nil
		}
	}
	var names []string
	if err := val.Decode(&names); err != nil {
		return nil, err
	}
	return append([]string{}, names...), nil
}

// conditionRules reads the condition rules of a kind. Upstream writes a
// rule as {type, when: {expression}, output: {status, reason, message}},
// each an expression; this version evaluates only its own form (one bool
// expression), so such a rule is skipped with a warning naming the fix
// rather than stopping an upstream file from loading.
func conditionRules(val *yaml.Node, kind string, warn func(int, string, ...any)) ([]resource.ConditionRule, error) {
	var specs []conditionSpec
	if err := val.Decode(&specs); err != nil {
		return nil, err
	}
	var out []resource.ConditionRule
	for j, c := range specs {
		line := val.Line
		var item *yaml.Node
		if j < len(val.Content) {
			item, line = val.Content[j], val.Content[j].Line
		}
		if upstreamRule(item) {
			warn(line, "condition %s of kind %s is in upstream's when/output form, which this version does not evaluate: the condition is not computed. "+
				"Rewrite it as expression: <a bool CEL expression over statuses and generation> with optional reason and message (operator guide, \"Condition rules\")", c.Type, kind)
			continue
		}
		out = append(out, resource.ConditionRule{Type: c.Type, Expression: c.Expression, Reason: c.Reason, Message: c.Message, Line: line})
	}
	return out, nil
}

// upstreamRule reports whether a rule is written in upstream's form: when
// or output present, no expression of its own.
func upstreamRule(item *yaml.Node) bool {
	if item == nil || item.Kind != yaml.MappingNode {
		return false
	}
	var upstream, own bool
	for i := 0; i+1 < len(item.Content); i += 2 {
		switch item.Content[i].Value {
		case "when", "output":
			upstream = true
		case "expression":
			own = true
		}
	}
	return upstream && !own
}
