// Package projection implements the fields= query parameter: it parses a
// comma-separated list of field paths against the shape of a resource and
// cuts an encoded resource down to those fields.
//
// It works on the JSON the API already wrote, copying the kept values
// byte for byte: numbers stay exactly as stored and keys keep the order
// the API writes them in. It has no dependencies beyond the standard
// library.
package projection

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Limits of one fields= value; beyond them the request is refused, as
// every other query parameter's limits are.
const (
	// MaxLength bounds the whole value, in bytes.
	MaxLength = 1024
	// MaxFields bounds the number of entries.
	MaxFields = 32
	// MaxDepth bounds the segments of one path (spec.a.b.c is 4).
	MaxDepth = 16
)

// AlwaysKept are the fields every projected item keeps, asked for or not:
// they say what the item is and where to read the rest of it.
var AlwaysKept = []string{"kind", "id", "href"}

// Error is a refused fields= value: the entry at fault (the whole value
// when it is the value that is wrong) and why.
type Error struct {
	Entry   string
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(entry, format string, args ...any) *Error {
	return &Error{Entry: entry, Message: fmt.Sprintf(format, args...)}
}

// shape is what may be named below a field.
type shape int

const (
	leaf    shape = iota // a scalar: nothing below it
	object               // fixed members (an array of objects: each element's members)
	open                 // any JSON below it (spec): each dotted segment is a key
	flatMap              // a map of strings (labels): the rest of the path is one key
)

// Schema is the shape of a document: what each of its fields holds.
type Schema struct {
	shape   shape
	members map[string]*Schema
}

var scalar = &Schema{shape: leaf}

func members(names ...string) *Schema {
	s := &Schema{shape: object, members: map[string]*Schema{}}
	for _, n := range names {
		s.members[n] = scalar
	}
	return s
}

// Resource is the shape of a resource as the API writes it
// (resource.Resource). A test checks it against the encoder.
var Resource = &Schema{shape: object, members: map[string]*Schema{
	"kind": scalar, "id": scalar, "href": scalar, "name": scalar,
	"owner_references": members("kind", "id", "href"),
	"references":       members("ref_type", "kind", "id", "href"),
	"generation":       scalar,
	"spec":             {shape: open},
	"labels":           {shape: flatMap},
	"tenancy":          {shape: flatMap},
	"created_time":     scalar, "updated_time": scalar,
	"created_by": scalar, "updated_by": scalar,
	"deleted_time": scalar, "deleted_by": scalar,
	"status": {shape: object, members: map[string]*Schema{
		"conditions": members("type", "status", "reason", "message", "observed_generation",
			"created_time", "last_updated_time", "last_transition_time"),
	}},
}}

// topLevel lists Resource's members for messages, in the order the API
// writes them.
const topLevel = "kind, id, href, name, owner_references, references, generation, spec, labels, tenancy, " +
	"created_time, updated_time, created_by, updated_by, deleted_time, deleted_by, status"

var (
	// segmentPattern is what a segment of a spec path may hold, as in a
	// search's spec.<path>.
	segmentPattern = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)
	// mapKeyPattern is what a label or tenancy key may hold: a qualified
	// name's characters (prefix/name), dots included.
	mapKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-/]+$`)
)

// Projection is a parsed fields= value: the tree of what to keep.
type Projection struct {
	root *node
	// Fields are the entries as asked, trimmed, in order, without repeats.
	Fields []string
}

// node is one level of the tree: keep the whole value (all), or only the
// named members of an object (of each object of an array).
type node struct {
	all      bool
	children map[string]*node
}

func (n *node) child(name string) *node {
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c, ok := n.children[name]
	if !ok {
		c = &node{}
		n.children[name] = c
	}
	return c
}

// Parse reads a fields= value against a shape (Resource). Entries are
// separated by commas, may carry spaces around them, and name a member or
// a dotted path below one: status.conditions, spec.platform.type,
// labels.app.kubernetes.io/name. A path through an array (references,
// status.conditions, a spec array) applies to each of its objects. A path
// below one already asked for adds nothing. Refused, naming the entry: an
// empty entry, an unknown field, a path below a scalar, a malformed path;
// and, naming the whole value, one over MaxLength bytes or MaxFields
// entries.
func Parse(value string, s *Schema) (*Projection, error) {
	if len(value) > MaxLength {
		return nil, errorf(truncate(value, 64), "fields is %d bytes long; the limit is %d", len(value), MaxLength)
	}
	entries := strings.Split(value, ",")
	if len(entries) > MaxFields {
		return nil, errorf(truncate(value, 64), "fields names %d entries; the limit is %d", len(entries), MaxFields)
	}
	p := &Projection{root: &node{}}
	seen := map[string]bool{}
	for _, raw := range entries {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			return nil, errorf(raw, "fields has an empty entry; separate field names with single commas, e.g. fields=id,name,status.conditions")
		}
		if err := p.add(entry, s); err != nil {
			return nil, err
		}
		if !seen[entry] {
			seen[entry] = true
			p.Fields = append(p.Fields, entry)
		}
	}
	for _, name := range AlwaysKept {
		if _, known := s.members[name]; known {
			p.root.child(name).all = true
		}
	}
	return p, nil
}

// add puts one entry into the tree after checking it against the shape.
func (p *Projection) add(entry string, s *Schema) error {
	if depth := strings.Count(entry, ".") + 1; depth > MaxDepth {
		return errorf(entry, "%s is %d segments deep; the limit is %d", truncate(entry, 64), depth, MaxDepth)
	}
	head, rest, dotted := strings.Cut(entry, ".")
	n := p.root
	path := head
	for {
		sub, ok := s.members[head]
		switch {
		case !ok && s == Resource:
			return errorf(entry, "unknown field %q; the fields are %s", truncate(head, 64), topLevel)
		case !ok && n == p.root:
			return errorf(entry, "unknown field %q; the fields are %s", truncate(head, 64), memberList(s))
		case !ok:
			return errorf(entry, "unknown field %q of %s; it has %s", truncate(head, 64), strings.TrimSuffix(path, "."+head), memberList(s))
		}
		n = n.child(head)
		if !dotted {
			n.all = true
			return nil
		}
		switch sub.shape {
		case leaf:
			return errorf(entry, "%s has no fields to select; ask for %s itself", path, path)
		case flatMap:
			if !mapKeyPattern.MatchString(rest) {
				return errorf(entry, "%q is not a key of %s: a key holds letters, digits and . _ - /", truncate(rest, 64), path)
			}
			n.child(rest).all = true
			return nil
		case open:
			segments := strings.Split(rest, ".")
			for _, seg := range segments {
				if !segmentPattern.MatchString(seg) {
					return errorf(entry, "path segment %q of %s may only hold letters, digits, '_' and '-'", truncate(seg, 64), truncate(entry, 64))
				}
			}
			for _, seg := range segments {
				n = n.child(seg)
			}
			n.all = true
			return nil
		case object:
		}
		s = sub
		head, rest, dotted = strings.Cut(rest, ".")
		path += "." + head
	}
}

func memberList(s *Schema) string {
	names := make([]string, 0, len(s.members))
	for n := range s.members {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
