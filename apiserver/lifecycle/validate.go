package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/internal/jsonnum"
	"github.com/hyperfleet/hyperfleet/resource"
)

// CreateRequest is the body of POST /clusters and POST .../nodepools.
type CreateRequest struct {
	Kind   string            `json:"kind"`
	Name   string            `json:"name"`
	Spec   json.RawMessage   `json:"spec"`
	Labels map[string]string `json:"labels,omitempty"`
	// References are the typed links of kinds that declare references.
	References []ReferenceRequest `json:"references,omitempty"`
}

// ReferenceRequest links a resource to another by the reference type its
// kind declares and the target's id.
type ReferenceRequest struct {
	RefType string `json:"ref_type"`
	ID      string `json:"id"`
}

// PatchRequest is the body of PATCH on a cluster or node pool. A field that
// is absent is left alone; a field that is present replaces the stored one.
type PatchRequest struct {
	Spec   json.RawMessage    `json:"spec,omitempty"`
	Labels *map[string]string `json:"labels,omitempty"`
	// References, when present, replace the stored links.
	References *[]ReferenceRequest `json:"references,omitempty"`
}

// ForceDeleteRequest is the body of POST .../force-delete.
type ForceDeleteRequest struct {
	Reason string `json:"reason"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateCreate checks a create body of one of the default kinds.
func ValidateCreate(kind string, req *CreateRequest) []problem.FieldError {
	k, ok := resource.Defaults().Get(kind)
	if !ok {
		k = resource.Kind{Kind: kind, NameMinLen: resource.DefaultNameMinLen, NameMaxLen: resource.DefaultNameMaxLen}
	}
	return ValidateCreateFor(k, req)
}

// ValidateCreateFor checks a create body against the contract and the
// kind's name limits; it reports every problem at once.
func ValidateCreateFor(k resource.Kind, req *CreateRequest) []problem.FieldError {
	kind := k.Kind
	var errs []problem.FieldError
	switch {
	case req.Kind == "":
		errs = append(errs, problem.FieldError{Field: "kind", Constraint: "required", Message: fmt.Sprintf("kind is required and must be %q", kind)})
	case req.Kind != kind:
		errs = append(errs, problem.FieldError{Field: "kind", Value: req.Kind, Constraint: "enum=" + kind, Message: fmt.Sprintf("kind must be %q on this endpoint", kind)})
	}
	errs = append(errs, validateName(k, req.Name)...)
	errs = append(errs, validateSpec(req.Spec, true)...)
	errs = append(errs, validateLabels(req.Labels)...)
	errs = append(errs, ValidateReferences(k, req.References)...)
	return errs
}

// ValidatePatch checks a patch body.
func ValidatePatch(req *PatchRequest) []problem.FieldError {
	return ValidatePatchFor(resource.Kind{}, req)
}

// ValidatePatchFor checks a patch body against a kind's declared references.
func ValidatePatchFor(k resource.Kind, req *PatchRequest) []problem.FieldError {
	var errs []problem.FieldError
	if req.Spec != nil {
		errs = append(errs, validateSpec(req.Spec, true)...)
	}
	if req.Labels != nil {
		errs = append(errs, validateLabels(*req.Labels)...)
	}
	if req.References != nil {
		errs = append(errs, ValidateReferences(k, *req.References)...)
	}
	return errs
}

// ValidateReferences checks the shape of a list of links against the
// references a kind declares: known ref_type, an id, no link twice, and each
// type's count within its min and max. Whether the targets exist is checked
// in the transaction that stores them.
func ValidateReferences(k resource.Kind, refs []ReferenceRequest) []problem.FieldError {
	var errs []problem.FieldError
	declared := map[string]resource.Reference{}
	for _, d := range k.References {
		declared[d.RefType] = d
	}
	counts := map[string]int{}
	seen := map[ReferenceRequest]bool{}
	for i, r := range refs {
		field := fmt.Sprintf("references[%d]", i)
		d, ok := declared[r.RefType]
		switch {
		case len(k.References) == 0:
			errs = append(errs, problem.FieldError{Field: field + ".ref_type", Value: problem.Truncate(r.RefType, 64), Constraint: "declared",
				Message: fmt.Sprintf("kind %s declares no references; remove references", k.Kind)})
			continue
		case !ok:
			errs = append(errs, problem.FieldError{Field: field + ".ref_type", Value: problem.Truncate(r.RefType, 64), Constraint: "enum=" + strings.Join(refTypes(k), ","),
				Message: fmt.Sprintf("kind %s declares no reference %q; use one of %s", k.Kind, r.RefType, strings.Join(refTypes(k), ", "))})
			continue
		case r.ID == "":
			errs = append(errs, problem.FieldError{Field: field + ".id", Constraint: "required",
				Message: fmt.Sprintf("reference %s needs the id of a %s", r.RefType, d.TargetKind)})
			continue
		case seen[r]:
			errs = append(errs, problem.FieldError{Field: field, Value: problem.Truncate(r.ID, 64), Constraint: "unique",
				Message: fmt.Sprintf("reference %s to %s is listed twice", r.RefType, problem.Truncate(r.ID, 64))})
			continue
		}
		seen[r] = true
		counts[r.RefType]++
	}
	for _, d := range k.References {
		n := counts[d.RefType]
		if n < d.Min || d.Max > 0 && n > d.Max {
			limit := fmt.Sprintf("at least %d", d.Min)
			if d.Max > 0 {
				limit = fmt.Sprintf("%d to %d", d.Min, d.Max)
			}
			errs = append(errs, problem.FieldError{Field: "references", Value: n, Constraint: fmt.Sprintf("count(%s)=%d..%d", d.RefType, d.Min, d.Max),
				Message: fmt.Sprintf("a %s takes %s reference(s) %s to a %s (got %d)", k.Kind, limit, d.RefType, d.TargetKind, n)})
		}
	}
	return errs
}

func refTypes(k resource.Kind) []string {
	out := make([]string, 0, len(k.References))
	for _, d := range k.References {
		out = append(out, d.RefType)
	}
	return out
}

// ValidateForceDelete checks the reason of a force-delete.
func ValidateForceDelete(req *ForceDeleteRequest) []problem.FieldError {
	n := len([]rune(strings.TrimSpace(req.Reason)))
	if n < 1 || len([]rune(req.Reason)) > 1024 {
		return []problem.FieldError{{Field: "reason", Value: problem.Truncate(req.Reason, 64), Constraint: "length=1..1024",
			Message: "reason is required: 1 to 1024 characters saying why the deletion is forced"}}
	}
	return nil
}

func validateName(k resource.Kind, name string) []problem.FieldError {
	switch {
	case name == "":
		return []problem.FieldError{{Field: "name", Constraint: "required", Message: "name is required"}}
	case len(name) < k.NameMinLen || len(name) > k.NameMaxLen:
		return []problem.FieldError{{Field: "name", Value: problem.Truncate(name, 64), Constraint: fmt.Sprintf("length=%d..%d", k.NameMinLen, k.NameMaxLen),
			Message: fmt.Sprintf("a %s name must be %d to %d characters long (got %d)", k.Kind, k.NameMinLen, k.NameMaxLen, len(name))}}
	case !namePattern.MatchString(name):
		return []problem.FieldError{{Field: "name", Value: problem.Truncate(name, 64), Constraint: "pattern=" + namePattern.String(),
			Message: "name must be lowercase letters, digits and '-', starting and ending with a letter or digit"}}
	}
	return nil
}

// Bounds of what one resource holds besides its spec's size (the server's
// --spec-limit): every label and every scalar of the spec is a row of the
// search index (SQLite's resource_terms: a 32,000-element array took over
// a second to write and 10 MB), and labels are listed with every resource.
const (
	MaxLabels     = 64
	MaxLabelBytes = 16 << 10 // keys and values together
	MaxSpecValues = 1000
)

func validateSpec(spec json.RawMessage, required bool) []problem.FieldError {
	trimmed := bytes.TrimSpace(spec)
	switch {
	case len(trimmed) == 0:
		if !required {
			return nil
		}
		return []problem.FieldError{{Field: "spec", Constraint: "required", Message: "spec is required and must be an object ({} is fine)"}}
	case trimmed[0] != '{':
		return []problem.FieldError{{Field: "spec", Value: problem.Truncate(string(trimmed), 64), Constraint: "type=object", Message: "spec must be a JSON object"}}
	}
	if n := countValues(trimmed); n > MaxSpecValues {
		return []problem.FieldError{{Field: "spec", Value: n, Constraint: fmt.Sprintf("maxValues=%d", MaxSpecValues),
			Message: fmt.Sprintf("spec holds %d values (strings, numbers and booleans, array elements included); the limit is %d, each is indexed for search", n, MaxSpecValues)}}
	}
	return nil
}

// countValues counts the strings, numbers and booleans of a document that
// are values (not object keys): what the search index keeps a row for.
// The body was checked as JSON already; a document that still does not
// decode counts what it read.
func countValues(doc []byte) int {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	// inObject[i] tells an object from an array at depth i; expectKey says
	// the next string of the innermost object is a key.
	var inObject []bool
	expectKey := false
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				inObject = append(inObject, t == '{')
				expectKey = t == '{'
				continue
			default:
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			if expectKey {
				expectKey = false
				continue
			}
			n++
		case json.Number, bool:
			n++
		}
		// A value ended: in an object, a key comes next.
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

func validateLabels(labels map[string]string) []problem.FieldError {
	// Over a limit, one error: each of thousands of labels would add its own.
	if len(labels) > MaxLabels {
		return []problem.FieldError{{Field: "labels", Value: len(labels), Constraint: fmt.Sprintf("maxItems=%d", MaxLabels),
			Message: fmt.Sprintf("a resource holds at most %d labels (got %d)", MaxLabels, len(labels))}}
	}
	size := 0
	for k, v := range labels {
		size += len(k) + len(v)
	}
	if size > MaxLabelBytes {
		return []problem.FieldError{{Field: "labels", Value: size, Constraint: fmt.Sprintf("maxBytes=%d", MaxLabelBytes),
			Message: fmt.Sprintf("labels hold %d bytes of keys and values; the limit is %d bytes", size, MaxLabelBytes)}}
	}
	var errs []problem.FieldError
	for k, v := range labels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, problem.FieldError{Field: "labels." + k, Value: problem.Truncate(k, 64), Constraint: "labelKey",
				Message: "invalid label key: " + strings.Join(msgs, "; ")})
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, problem.FieldError{Field: "labels." + k, Value: problem.Truncate(v, 64), Constraint: "labelValue",
				Message: "invalid label value: " + strings.Join(msgs, "; ")})
		}
	}
	sortFieldErrors(errs)
	return errs
}

func sortFieldErrors(errs []problem.FieldError) {
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].Field < errs[j-1].Field; j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
}

// SameJSON reports whether two JSON documents are semantically equal: key
// order, white space and number spelling (1 vs 1.0) do not count; numbers
// are compared exactly.
func SameJSON(a, b json.RawMessage) bool {
	x, err1 := decodeJSON(a)
	y, err2 := decodeJSON(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return equalJSON(x, y)
}

func decodeJSON(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalJSON(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		// Exact, whatever the spelling: as float64, 9007199254740993
		// equals 9007199254740992 and 2e-400 equals 0.
		return ok && jsonnum.Equal(string(x), string(y))
	default:
		return a == b
	}
}
