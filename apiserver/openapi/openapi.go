// Package openapi serves the OpenAPI 3 document of the API (written by hand
// in openapi.yaml for Cluster and NodePool, copied per kind for a kinds
// table, and checked against the router by a test) and a page that renders
// it without any network access.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var documentYAML []byte

//go:embed openapi.html
var page []byte

// Document returns the OpenAPI document as JSON.
func Document() ([]byte, error) {
	doc, err := yaml.YAMLToJSON(documentYAML)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	return doc, nil
}

// YAML returns the document as written.
func YAML() []byte { return documentYAML }

// Page returns the HTML page that renders the document.
func Page() []byte { return page }

// Operations lists "METHOD /path" for every operation in the document, with
// path parameters in OpenAPI form ({id}).
func Operations() ([]string, error) {
	raw, err := Document()
	if err != nil {
		return nil, err
	}
	return OperationsOf(raw)
}

// OperationsOf is Operations of a document given as JSON (DocumentFor).
func OperationsOf(raw []byte) ([]string, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	var ops []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				ops = append(ops, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(ops)
	return ops, nil
}
