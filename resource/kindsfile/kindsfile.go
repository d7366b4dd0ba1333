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
type kindFields struct {
	Kind              string          `yaml:"kind"`
	Plural            string          `yaml:"plural"`
	ParentKind        string          `yaml:"parent_kind"`
	OnParentDelete    string          `yaml:"on_parent_delete"`
	RequiredAdapters  []string        `yaml:"required_adapters"`
	NameMinLen        int             `yaml:"name_min_len"`
	NameMaxLen        int             `yaml:"name_max_len"`
	SpecSchemaName    string          `yaml:"spec_schema_name"`
	RequireSpecSchema bool            `yaml:"require_spec_schema"`
	References        []referenceSpec `yaml:"references"`
	Conditions        []conditionSpec `yaml:"conditions"`
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

var known = map[string]bool{
	"kind": true, "plural": true, "parent_kind": true, "on_parent_delete": true, "required_adapters": true,
	"name_min_len": true, "name_max_len": true, "spec_schema_name": true, "require_spec_schema": true,
	"references": true, "conditions": true,
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
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if !known[key.Value] {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s:%d: field %q of kind %s is not used", name, key.Line, key.Value, f.Kind))
		}
		switch key.Value {
		case "required_adapters":
			// Present, even as [], is a decision; absent leaves it to the
			// HYPERFLEET_<KIND>_ADAPTERS variable.
			k.RequiredAdapters = append([]string{}, f.RequiredAdapters...)
		case "references":
			for j, r := range f.References {
				line := val.Line
				if j < len(val.Content) {
					line = val.Content[j].Line
				}
				k.References = append(k.References, resource.Reference{RefType: r.RefType, TargetKind: r.TargetKind, Min: r.Min, Max: r.Max, Line: line})
			}
		case "conditions":
			for j, c := range f.Conditions {
				line := val.Line
				if j < len(val.Content) {
					line = val.Content[j].Line
				}
				k.Conditions = append(k.Conditions, resource.ConditionRule{Type: c.Type, Expression: c.Expression, Reason: c.Reason, Message: c.Message, Line: line})
			}
		}
	}
	return k, nil
}
