// Package specschema validates a resource's spec against an operator-supplied
// OpenAPI document that names a schema per kind: the kind's spec_schema_name,
// by default <Kind>Spec (ClusterSpec, NodePoolSpec: the convention of
// upstream HyperFleet). Schemas of no served kind are ignored.
package specschema

import (
	"bytes"
	"context"
	_ "embed"
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

//go:embed base.yaml
var baseDocument []byte

// LoadFor reads an OpenAPI 3 document (path "": none) over the built-in
// base (base.yaml: upstream's core kinds' spec schemas, open objects). A
// kind's schema is the document's, else, for a kind with
// require_spec_schema, the base's; a kind with neither is not validated,
// and a kind that requires a schema neither defines is an error. A
// document must define the schema of at least one kind.
func LoadFor(path string, kinds *resource.Kinds) (*Validator, error) {
	base, err := load("the built-in base spec schemas", func(l *openapi3.Loader) (*openapi3.T, error) { return l.LoadFromData(baseDocument) })
	if err != nil {
		return nil, err
	}
	var doc *openapi3.T
	if path != "" {
		if doc, err = load(path, func(l *openapi3.Loader) (*openapi3.T, error) { return l.LoadFromFile(path) }); err != nil {
			return nil, err
		}
	}
	v := &Validator{schemas: map[string]*openapi3.Schema{}}
	var names []string
	fromDoc := 0
	for _, k := range kinds.All() {
		names = append(names, k.SpecSchemaName)
		if s := schemaOf(doc, k.SpecSchemaName); s != nil {
			v.schemas[k.Kind] = s
			fromDoc++
			continue
		}
		if !k.RequireSpecSchema {
			continue
		}
		if s := schemaOf(base, k.SpecSchemaName); s != nil {
			v.schemas[k.Kind] = s
			continue
		}
		if path == "" {
			return nil, fmt.Errorf("kind %s has require_spec_schema, and its %s is not one of the built-in base's (ClusterSpec, NodePoolSpec, WifConfigSpec, ChannelSpec, VersionSpec): name an OpenAPI document with it (--spec-schema)", k.Kind, k.SpecSchemaName)
		}
		return nil, fmt.Errorf("spec schema %s: components.schemas has no %s, which kind %s requires (require_spec_schema); add it or drop the requirement", path, k.SpecSchemaName, k.Kind)
	}
	if path != "" && fromDoc == 0 {
		return nil, fmt.Errorf("spec schema %s: components.schemas has none of %s; add the schema for the kinds to validate", path, strings.Join(names, ", "))
	}
	return v, nil
}

// load reads and validates an OpenAPI 3 document; name is for errors.
func load(name string, read func(*openapi3.Loader) (*openapi3.T, error)) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := read(loader)
	if err != nil {
		return nil, fmt.Errorf("spec schema %s: not a readable OpenAPI 3 document: %w", name, err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("spec schema %s: invalid OpenAPI document: %w", name, err)
	}
	return doc, nil
}

// schemaOf is a document's schema of that name (nil: none).
func schemaOf(doc *openapi3.T, name string) *openapi3.Schema {
	if doc == nil || doc.Components == nil {
		return nil
	}
	if ref, ok := doc.Components.Schemas[name]; ok && ref.Value != nil {
		return ref.Value
	}
	return nil
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
