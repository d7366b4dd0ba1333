// Package search translates the `search` parameter of list endpoints, written
// in Tree Search Language (github.com/yaacov/tree-search-language), into a SQL
// WHERE clause for PostgreSQL or SQLite. Only field names the contract lists
// are accepted, and nothing from the query reaches SQL except as a bound
// parameter: field names map to fixed column expressions, and label keys and
// spec paths are validated and then bound as values.
package search

import (
	"fmt"
	"strings"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
)

// Dialect selects the SQL flavour.
type Dialect int

const (
	Postgres Dialect = iota
	SQLite
)

// PostgresSpecColumn is the column PostgreSQL searches a resource's spec
// in: jsonb generated from the spec column, which keeps the text as sent
// (schema version 12). SQLite searches the spec column itself.
const PostgresSpecColumn = "spec_jsonb"

// MaxQueryLength bounds the search text; longer input is rejected before parsing.
const MaxQueryLength = 4096

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

// MaxTerms bounds the comparisons of one search (an in list counts as one)
// and MaxListValues the values of one in list: each value becomes a SQL
// comparison, and databases refuse statements whose expression tree is too
// large (SQLite at a depth of 1,000).
const (
	MaxTerms      = 32
	MaxListValues = 100
)

// Options describe the table being searched.
type Options struct {
	// Table qualifies every column (the translator emits sub-queries whose
	// own columns would otherwise shadow the table's).
	Table string
	// OwnerReferences enables owner_references.id (node pool lists).
	OwnerReferences bool
	// Kind enables kind (the /resources list across kinds).
	Kind bool
	// Indexed lets equality on labels, conditions and spec fields be
	// served by an index as well as checked exactly: on SQLite through the
	// resource_terms table (schema version 6), on PostgreSQL through the
	// GIN index on spec (labels and conditions use theirs already). Each
	// such comparison becomes "index filter AND exact comparison", so the
	// result is the same; only the plan changes. It also gives a
	// conjunction of such equalities its TermPlan (Where.Plan), on both
	// backends.
	Indexed bool
	// RefTypes are the reference types the searched kind declares, for
	// references.<ref_type>.id: nil takes any (a list across kinds), an
	// empty list none. The links are read from resource_references
	// (indexed by target) when Indexed, else from the row's refs
	// document, which the change log keeps too.
	RefTypes []string
	// Disallowed, when set, refuses the fields it reports true for (a
	// kind's search_disallowed_fields).
	Disallowed func(field string) bool
}

// Where is a translated clause: SQL with `?` placeholders and their values.
type Where struct {
	SQL  string
	Args []any
	// Plan, when set, answers the same search from the term index (see
	// TermPlan); SQL stays the authoritative form.
	Plan *TermPlan
}

// Error is a query the API refuses; Message is safe to show to the caller.
type Error struct {
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(format string, args ...any) *Error { return &Error{Message: fmt.Sprintf(format, args...)} }

// Translate parses a TSL query and returns the WHERE clause. An empty query
// yields an empty clause.
func Translate(query string, d Dialect, opts Options) (w Where, err error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return Where{}, nil
	}
	if len(query) > MaxQueryLength {
		return Where{}, errorf("search is %d characters long; the limit is %d", len(query), MaxQueryLength)
	}
	defer func() {
		// The parser is third-party code: a panic on odd input must become a 400, not a crash.
		if r := recover(); r != nil {
			w, err = Where{}, errorf("search could not be parsed")
		}
	}()
	if err := checkNumbers(query); err != nil {
		return Where{}, err
	}
	tree, perr := tsl.ParseTSL(sqlStyleLists(query))
	if perr != nil {
		return Where{}, errorf("search is not valid TSL: %s", cleanParseError(perr))
	}
	t := translator{dialect: d, opts: opts}
	sql, err := t.node(tree, 0)
	if err != nil {
		return Where{}, err
	}
	w = Where{SQL: sql, Args: t.args}
	if opts.Indexed {
		w.Plan = planTerms(tree, d, opts)
	}
	return w, nil
}

type translator struct {
	dialect Dialect
	opts    Options
	args    []any
	terms   int
}

func (t *translator) bind(v any) string {
	t.args = append(t.args, v)
	return "?"
}

func (t *translator) node(n *tsl.TSLNode, depth int) (string, error) {
	if depth > maxDepth {
		return "", errorf("search is nested more than %d levels deep", maxDepth)
	}
	op, ok := n.AsExprOp()
	if !ok {
		return "", errorf("search must be a comparison such as name='my-cluster', not a bare %s", describe(n))
	}
	switch op.Operator {
	case tsl.OpAnd, tsl.OpOr:
		l, err := t.node(op.Left, depth+1)
		if err != nil {
			return "", err
		}
		r, err := t.node(op.Right, depth+1)
		if err != nil {
			return "", err
		}
		word := " AND "
		if op.Operator == tsl.OpOr {
			word = " OR "
		}
		return "(" + l + word + r + ")", nil
	case tsl.OpNot:
		inner, err := t.node(op.Right, depth+1)
		if err != nil {
			return "", err
		}
		return "(NOT " + inner + ")", nil
	case tsl.OpEQ, tsl.OpNE, tsl.OpLT, tsl.OpLE, tsl.OpGT, tsl.OpGE, tsl.OpLike, tsl.OpIn:
		return t.comparison(op)
	case tsl.OpMinus:
		if op.Left.Type() == tsl.KindIdentifier && op.Right.Type() == tsl.KindIdentifier {
			l, _ := op.Left.AsString()
			r, _ := op.Right.AsString()
			return "", errorf("%s-%s is read as a subtraction; quote names that contain '-' with brackets, e.g. labels['cost-center']", l, r)
		}
	}
	return "", errorf("operator %s is not supported; use =, !=, <, <=, >, >=, in, like, and, or, not and parentheses", operatorName(op.Operator))
}

func (t *translator) comparison(op tsl.TSLExpressionOp) (string, error) {
	if op.Left.Type() != tsl.KindIdentifier {
		if op.Right != nil && op.Right.Type() == tsl.KindIdentifier {
			return "", errorf("put the field on the left of the comparison, e.g. name = 'x'")
		}
		if inner, ok := op.Left.AsExprOp(); ok {
			switch inner.Operator {
			case tsl.OpMinus:
				return t.node(op.Left, 0)
			case tsl.OpNot:
				return "", errorf("not applies to the whole comparison: write not (%s)", "field = 'value'")
			}
		}
		return "", errorf("the left side of %s must be a field name, not %s", operatorName(op.Operator), describe(op.Left))
	}
	if t.terms++; t.terms > MaxTerms {
		return "", errorf("search has more than %d comparisons; the limit is %d (an in list counts as one)", MaxTerms, MaxTerms)
	}
	name, _ := op.Left.AsString()
	f, err := t.resolve(name)
	if err != nil {
		return "", err
	}
	if op.Operator == tsl.OpIn {
		arr, ok := op.Right.AsArray()
		if !ok {
			return "", errorf("in needs a list of values, e.g. %s in ('a', 'b')", name)
		}
		if len(arr.Values) == 0 {
			return "", errorf("in needs at least one value")
		}
		if len(arr.Values) > MaxListValues {
			return "", errorf("the in list of %s has %d values; the limit is %d", name, len(arr.Values), MaxListValues)
		}
		parts := make([]string, 0, len(arr.Values))
		for _, v := range arr.Values {
			p, err := t.compare(f, tsl.OpEQ, v)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return "(" + strings.Join(parts, " OR ") + ")", nil
	}
	if op.Right != nil && op.Right.Type() == tsl.KindArrayLiteral {
		return "", errorf("a list of values only goes with in, not %s", operatorName(op.Operator))
	}
	return t.compare(f, op.Operator, op.Right)
}
