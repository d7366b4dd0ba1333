// Package specschema validates a resource's spec against an operator-supplied
// OpenAPI document that names a schema per kind: the kind's spec_schema_name,
// by default <Kind>Spec (ClusterSpec, NodePoolSpec: the convention of
// upstream HyperFleet). Schemas of no served kind are ignored.
package specschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Validator holds the compiled spec schemas per kind.
type Validator struct {
	schemas map[string]*openapi3.Schema
}

// Load reads an OpenAPI 3 document for the default kinds.
func Load(path string) (*Validator, error) { return LoadFor(path, resource.Defaults()) }

// LoadFor reads an OpenAPI 3 document. It must define the schema of at least
// one kind, and of every kind with require_spec_schema; a kind without a
// schema is not validated.
func LoadFor(path string, kinds *resource.Kinds) (*Validator, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec schema %s: not a readable OpenAPI 3 document: %w", path, err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("spec schema %s: invalid OpenAPI document: %w", path, err)
	}
	v := &Validator{schemas: map[string]*openapi3.Schema{}}
	var names []string
	for _, k := range kinds.All() {
		names = append(names, k.SpecSchemaName)
		if doc.Components != nil {
			if ref, ok := doc.Components.Schemas[k.SpecSchemaName]; ok && ref.Value != nil {
				v.schemas[k.Kind] = ref.Value
				continue
			}
		}
		if k.RequireSpecSchema {
			return nil, fmt.Errorf("spec schema %s: components.schemas has no %s, which kind %s requires (require_spec_schema); add it or drop the requirement", path, k.SpecSchemaName, k.Kind)
		}
	}
	if len(v.schemas) == 0 {
		return nil, fmt.Errorf("spec schema %s: components.schemas has none of %s; add the schema for the kinds to validate", path, strings.Join(names, ", "))
	}
	return v, nil
}

// Kinds lists the kinds with a schema.
func (v *Validator) Kinds() []string {
	var out []string
	for k := range v.schemas {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ValidateSpec checks a spec; every violation becomes a field error under
// "spec.".
func (v *Validator) ValidateSpec(kind string, spec json.RawMessage) []problem.FieldError {
	schema, ok := v.schemas[kind]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return []problem.FieldError{{Field: "spec", Message: "spec is not valid JSON"}}
	}
	value = numbersToFloat(value)
	err := schema.VisitJSON(value, openapi3.MultiErrors())
	if err == nil {
		return nil
	}
	var out []problem.FieldError
	collect(err, &out)
	if len(out) == 0 {
		out = append(out, problem.FieldError{Field: "spec", Message: err.Error()})
	}
	return out
}

func collect(err error, out *[]problem.FieldError) {
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		for _, e := range multi {
			collect(e, out)
		}
		return
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		field := "spec"
		if p := se.JSONPointer(); len(p) > 0 {
			field += "." + strings.Join(p, ".")
		}
		*out = append(*out, problem.FieldError{Field: field, Constraint: se.SchemaField, Message: se.Reason})
		return
	}
	*out = append(*out, problem.FieldError{Field: "spec", Message: err.Error()})
}

// numbersToFloat converts json.Number into the float64 kin-openapi expects.
func numbersToFloat(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbersToFloat(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersToFloat(e)
		}
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return v
}
