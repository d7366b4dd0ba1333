// Package search translates the `search` parameter of list endpoints, written
// in Tree Search Language (github.com/yaacov/tree-search-language), into a SQL
// WHERE clause for PostgreSQL or SQLite. Only field names the contract lists
// are accepted, and nothing from the query reaches SQL except as a bound
// parameter: field names map to fixed column expressions, and label keys and
// spec paths are validated and then bound as values.
package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Dialect selects the SQL flavour.
type Dialect int

const (
	Postgres Dialect = iota
	SQLite
)

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

// sqlStyleLists rewrites SQL-style lists, name in ('a', 'b'), into TSL's
// bracket form, name in ['a', 'b'], so both spellings work. Quoted text is
// left alone.
func sqlStyleLists(q string) string {
	b := []byte(q)
	inQuote := byte(0)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inQuote != 0 {
			if c == inQuote {
				inQuote = 0
			}
			continue
		}
		if c == '\'' || c == '"' || c == '`' {
			inQuote = c
			continue
		}
		if (c != 'i' && c != 'I') || i+1 >= len(b) || (b[i+1] != 'n' && b[i+1] != 'N') {
			continue
		}
		if i > 0 && isWordByte(b[i-1]) || i+2 < len(b) && isWordByte(b[i+2]) {
			continue
		}
		j := i + 2
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j++
		}
		if j >= len(b) || b[j] != '(' {
			continue
		}
		if end := closingParen(b, j); end > 0 {
			b[j], b[end] = '[', ']'
		}
	}
	return string(b)
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// closingParen finds the ')' of a flat value list starting at open, or -1.
func closingParen(b []byte, open int) int {
	inQuote := byte(0)
	for k := open + 1; k < len(b); k++ {
		switch c := b[k]; {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			inQuote = c
		case c == '(':
			return -1
		case c == ')':
			return k
		}
	}
	return -1
}

func cleanParseError(err error) string {
	msg := err.Error()
	if se, ok := err.(*tsl.SyntaxError); ok {
		msg = fmt.Sprintf("%s at position %d", se.Message, se.Position)
	}
	return msg
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

// fieldKind is the type of a searchable field.
type fieldKind int

const (
	textField fieldKind = iota
	intField
	timeField
	labelField
	specField
	conditionField
)

type field struct {
	name   string // as written in the query, for messages
	kind   fieldKind
	column string   // qualified column for scalar fields
	key    string   // label key
	path   []string // spec path
	cond   string   // condition type
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
	case strings.HasPrefix(name, "status.conditions."):
		ct := strings.TrimPrefix(name, "status.conditions.")
		if !conditionTypePattern.MatchString(ct) {
			return field{}, errorf("%q is not a condition type; use status.conditions.<Type>, e.g. status.conditions.Ready", ct)
		}
		return field{name: name, kind: conditionField, cond: ct}, nil
	}
	return field{}, errorf("unknown field %q; searchable fields are id, name, generation, created_time, updated_time, deleted_time, created_by, updated_by, labels.<key>, spec.<path>, status.conditions.<Type>%s",
		name, map[bool]string{true: ", owner_references.id", false: ""}[t.opts.OwnerReferences])
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

// literal is a right-hand value after type checks.
type literal struct {
	text   string
	num    float64
	isNum  bool
	isBool bool
	b      bool
	time   time.Time
	isTime bool
}

func readLiteral(n *tsl.TSLNode) (literal, error) {
	if op, ok := n.AsExprOp(); ok && op.Operator == tsl.OpUMinus && op.Left == nil && op.Right != nil && op.Right.Type() == tsl.KindNumericLiteral {
		f, _ := op.Right.AsFloat64()
		return literal{num: -f, isNum: true, text: strconv.FormatFloat(-f, 'f', -1, 64)}, nil
	}
	switch n.Type() {
	case tsl.KindStringLiteral:
		s, _ := n.AsString()
		return literal{text: s}, nil
	case tsl.KindNumericLiteral:
		f, _ := n.AsFloat64()
		return literal{num: f, isNum: true, text: strconv.FormatFloat(f, 'f', -1, 64)}, nil
	case tsl.KindBooleanLiteral:
		b, _ := n.AsBool()
		return literal{isBool: true, b: b, text: strconv.FormatBool(b)}, nil
	case tsl.KindDateLiteral, tsl.KindTimestampLiteral:
		if tv, ok := n.Value().(time.Time); ok {
			return literal{time: tv.UTC(), isTime: true, text: tv.Format(time.RFC3339)}, nil
		}
		s, _ := n.AsString()
		return literal{text: s}, nil
	}
	return literal{}, errorf("the right side of a comparison must be a value ('text', 42, true or a date), not %s", describe(n))
}

func (t *translator) compare(f field, op tsl.Operator, right *tsl.TSLNode) (string, error) {
	if right == nil {
		return "", errorf("%s needs a value", f.name)
	}
	lit, err := readLiteral(right)
	if err != nil {
		return "", err
	}
	// PostgreSQL refuses such text as a parameter (a 500 for whoever sent
	// it); no stored value holds it, so it is the same 400 on SQLite.
	if strings.IndexByte(lit.text, 0) >= 0 {
		return "", errorf("%s: the value holds a NUL character (\\u0000), which no stored value can hold", f.name)
	}
	if op == tsl.OpLike && f.kind != textField && f.kind != labelField && f.kind != specField {
		return "", errorf("like only applies to text fields, not %s", f.name)
	}
	switch f.kind {
	case textField:
		if lit.isNum || lit.isBool || lit.isTime {
			return "", errorf("%s is text; quote the value, e.g. %s = '%s'", f.name, f.name, lit.text)
		}
		return t.sqlCompare(f.column, op, t.bind(lit.text)), nil
	case intField:
		if !lit.isNum || lit.num != math.Trunc(lit.num) {
			return "", errorf("%s is an integer; compare it with a number, e.g. %s > 1", f.name, f.name)
		}
		if math.Abs(lit.num) > maxExactInt {
			return "", errorf("%s: %s is out of range; integers must lie within ±%d", f.name, lit.text, int64(maxExactInt))
		}
		return t.sqlCompare(f.column, op, t.bind(int64(lit.num))), nil
	case timeField:
		tv, err := timeValue(f.name, lit)
		if err != nil {
			return "", err
		}
		return t.sqlCompare(f.column, op, t.bind(tv)), nil
	case labelField:
		if lit.isNum || lit.isBool || lit.isTime {
			return "", errorf("label values are text; quote the value, e.g. %s = '%s'", f.name, lit.text)
		}
		if t.opts.Indexed && t.dialect == SQLite && op == tsl.OpEQ {
			pre := t.termFilter(t.bind(labelTerm(f.key, lit.text)))
			return "(" + pre + " AND " + t.sqlCompare(t.labelExpr(f.key), op, t.bind(lit.text)) + ")", nil
		}
		if t.dialect == Postgres && (op == tsl.OpEQ || op == tsl.OpNE) {
			// Containment uses the GIN index on labels; NOT containment also
			// matches resources without the label, like != elsewhere.
			doc, _ := json.Marshal(map[string]string{f.key: lit.text})
			contains := t.opts.Table + ".labels @> " + t.bind(string(doc)) + "::jsonb"
			if op == tsl.OpNE {
				return "(NOT " + contains + ")", nil
			}
			return contains, nil
		}
		return t.sqlCompare(t.labelExpr(f.key), op, t.bind(lit.text)), nil
	case specField:
		if pre := t.specFilter(f, op, lit); pre != "" {
			exact, err := t.specCompare(f, op, lit)
			if err != nil {
				return "", err
			}
			return "(" + pre + " AND " + exact + ")", nil
		}
		return t.specCompare(f, op, lit)
	case conditionField:
		return t.conditionCompare(f, op, lit)
	}
	return "", errorf("%s cannot be compared", f.name)
}

func timeValue(name string, lit literal) (time.Time, error) {
	if lit.isTime {
		return lit.time, nil
	}
	if !lit.isNum && !lit.isBool {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
			if tv, err := time.Parse(layout, lit.text); err == nil {
				return tv.UTC(), nil
			}
		}
	}
	return time.Time{}, errorf("%s is a time; compare it with an RFC 3339 date-time or a date, e.g. %s > '2025-01-01T00:00:00Z'", name, name)
}

// sqlCompare renders "expr op ?". != also matches rows where expr is NULL
// (a missing label is "not equal" to any value).
func (t *translator) sqlCompare(expr string, op tsl.Operator, placeholder string) string {
	switch op {
	case tsl.OpEQ:
		return expr + " = " + placeholder
	case tsl.OpNE:
		if t.dialect == Postgres {
			return expr + " IS DISTINCT FROM " + placeholder
		}
		return expr + " IS NOT " + placeholder
	case tsl.OpLT:
		return expr + " < " + placeholder
	case tsl.OpLE:
		return expr + " <= " + placeholder
	case tsl.OpGT:
		return expr + " > " + placeholder
	case tsl.OpGE:
		return expr + " >= " + placeholder
	case tsl.OpLike:
		return expr + " LIKE " + placeholder
	}
	panic("search: unexpected operator " + operatorName(op)) // unreachable: callers filter operators
}

func (t *translator) labelExpr(key string) string {
	col := t.opts.Table + ".labels"
	if t.dialect == Postgres {
		return "(" + col + " ->> " + t.bind(key) + ")"
	}
	return "json_extract(" + col + ", " + t.bind(`$."`+key+`"`) + ")"
}

func (t *translator) specCompare(f field, op tsl.Operator, lit literal) (string, error) {
	col := t.opts.Table + ".spec"
	pgPath := "{" + strings.Join(f.path, ",") + "}"
	sqlitePath := "$"
	for _, seg := range f.path {
		if _, err := strconv.Atoi(seg); err == nil {
			sqlitePath += "[" + seg + "]"
		} else {
			sqlitePath += `."` + seg + `"`
		}
	}
	switch {
	case lit.isBool:
		if op != tsl.OpEQ && op != tsl.OpNE {
			return "", errorf("%s: booleans only compare with = and !=", f.name)
		}
		var expr string
		if t.dialect == Postgres {
			expr = "(" + col + " #> " + t.bind(pgPath) + "::text[]) = " + t.bind(lit.text) + "::jsonb"
		} else {
			expr = t.sqliteJSON(col, "json_type", sqlitePath) + " = " + t.bind(lit.text)
		}
		if op == tsl.OpNE {
			return "(NOT COALESCE(" + expr + ", FALSE))", nil
		}
		return expr, nil
	case lit.isNum:
		if op == tsl.OpLike {
			return "", errorf("like needs a text pattern, not a number")
		}
		var expr string
		if t.dialect == Postgres {
			expr = "(CASE WHEN jsonb_typeof(" + col + " #> " + t.bind(pgPath) + "::text[]) = 'number' THEN (" + col + " #>> " + t.bind(pgPath) + "::text[])::numeric END)"
		} else {
			expr = "(CASE WHEN " + t.sqliteJSON(col, "json_type", sqlitePath) + " IN ('integer', 'real') THEN json_extract(" + col + ", " + t.bind(sqlitePath) + ") END)"
		}
		return t.sqlCompare(expr, op, t.bind(lit.num)), nil
	default:
		var expr string
		if t.dialect == Postgres {
			expr = "(" + col + " #>> " + t.bind(pgPath) + "::text[])"
		} else {
			expr = "(CASE WHEN " + t.sqliteJSON(col, "json_type", sqlitePath) + " = 'text' THEN json_extract(" + col + ", " + t.bind(sqlitePath) + ") END)"
		}
		return t.sqlCompare(expr, op, t.bind(lit.text)), nil
	}
}

// sqliteJSON applies a SQLite JSON function to a stored document only when
// the document is valid: SQLite raises "malformed JSON" for a document it
// cannot parse (such as one nested deeper than its limit), and one such row
// must not make every search fail. An invalid document matches nothing.
func (t *translator) sqliteJSON(col, fn, path string) string {
	return "(CASE WHEN json_valid(" + col + ") THEN " + fn + "(" + col + ", " + t.bind(path) + ") END)"
}

func (t *translator) conditionCompare(f field, op tsl.Operator, lit literal) (string, error) {
	if op != tsl.OpEQ && op != tsl.OpNE {
		return "", errorf("%s only compares with =, != or in", f.name)
	}
	if lit.isBool {
		lit.text = map[bool]string{true: "True", false: "False"}[lit.b]
	}
	if lit.text != "True" && lit.text != "False" {
		return "", errorf("%s is True or False, not %q", f.name, lit.text)
	}
	col := t.opts.Table + ".conditions"
	var pre, exists string
	if t.dialect == Postgres {
		exists = col + " @> " + t.bind(fmt.Sprintf(`[{"type":%q,"status":%q}]`, f.cond, lit.text)) + "::jsonb"
	} else {
		if t.opts.Indexed && op == tsl.OpEQ {
			// Bound first: the filter comes first in the SQL.
			pre = t.termFilter(t.bind(ConditionTerm(f.cond, lit.text)))
		}
		exists = "EXISTS (SELECT 1 FROM json_each(" + col + ") AS c WHERE json_extract(c.value, '$.type') = " +
			t.bind(f.cond) + " AND json_extract(c.value, '$.status') = " + t.bind(lit.text) + ")"
	}
	switch {
	case op == tsl.OpNE:
		return "(NOT " + exists + ")", nil
	case pre != "":
		return "(" + pre + " AND " + exists + ")", nil
	}
	return exists, nil
}

// ConditionTerm and labelTerm are terms of SQLite's resource_terms table;
// see termFilter. The store writes a resource's condition terms itself.
func ConditionTerm(condType, status string) string { return "c:" + condType + "=" + status }
func labelTerm(key, value string) string           { return "l:" + key + "=" + value }

// termFilter restricts a SQLite search to the resources holding a term of
// the resource_terms table; term is the placeholder (or expression) of
// the term. The triggers of schema version 6 write the terms:
//
//	l:<label key>=<value>
//	c:<condition type>=<status>
//	s:<spec path as json_tree's fullkey>=t:<text> | n:<number as REAL text> | b:true | b:false
func (t *translator) termFilter(term string) string {
	return t.opts.Table + ".id IN (SELECT resource_id FROM resource_terms WHERE term = " + term + ")"
}

// specTerm is the SQL expression (its values bound) of the term a spec
// equality looks for in resource_terms; lit is not a time.
func (t *translator) specTerm(f field, lit literal) string {
	prefix := "s:" + SQLiteFullKey(f.path) + "="
	switch {
	case lit.isBool:
		return t.bind(prefix + "b:" + lit.text)
	case lit.isNum:
		// Both sides render the number through SQLite's own REAL to
		// text conversion, so 3, 3.0 and 3e0 meet.
		return t.bind(prefix+"n:") + " || CAST(CAST(" + t.bind(lit.num) + " AS REAL) AS TEXT)"
	}
	return t.bind(prefix + "t:" + lit.text)
}

// specFilter is the index filter of a spec equality, or "" when there is
// none: a superset of the rows the exact comparison matches.
func (t *translator) specFilter(f field, op tsl.Operator, lit literal) string {
	if !t.opts.Indexed || op != tsl.OpEQ || lit.isTime {
		return ""
	}
	if t.dialect == SQLite {
		return t.termFilter(t.specTerm(f, lit))
	}
	// PostgreSQL: containment served by resources_spec (GIN). A numeric
	// segment may name an array element or an object key; containment
	// cannot say which, so such paths keep the exact comparison alone.
	for _, seg := range f.path {
		if _, err := strconv.Atoi(seg); err == nil {
			return ""
		}
	}
	col := t.opts.Table + ".spec"
	contains := func(v any) string {
		doc := v
		for i := len(f.path) - 1; i >= 0; i-- {
			doc = map[string]any{f.path[i]: doc}
		}
		raw, _ := json.Marshal(doc)
		return col + " @> " + t.bind(string(raw)) + "::jsonb"
	}
	switch {
	case lit.isBool:
		return contains(lit.b)
	case lit.isNum:
		// The exact comparison is in float8; a stored number with more
		// digits than float8 holds is found by its exact decimal only.
		return contains(lit.num)
	}
	// A quoted value matches text, and (through #>>) a number or boolean
	// written the same way. PostgreSQL writes numbers in plain decimal,
	// so only such a spelling can match one; one with an exponent is not
	// tried as a number (1e999999999 is beyond numeric and failed the
	// search).
	alts := []string{contains(lit.text)}
	if plainDecimal.MatchString(lit.text) {
		alts = append(alts, contains(json.RawMessage(lit.text)))
	}
	if lit.text == "true" || lit.text == "false" {
		alts = append(alts, contains(lit.text == "true"))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, " OR ") + ")"
}

var plainDecimal = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)

// SQLiteFullKey renders a spec path the way SQLite's json_tree names it in
// its fullkey column: array indexes in brackets, keys that are a letter
// followed by letters and digits bare, any other key double-quoted.
func SQLiteFullKey(path []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range path {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if plainKey(seg) {
			b.WriteString("." + seg)
			continue
		}
		b.WriteString(`."` + seg + `"`)
	}
	return b.String()
}

func plainKey(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isASCIILetter(s[i]) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// maxExactInt is the largest integer a search number holds exactly (2^53).
const maxExactInt = 1 << 53

// checkNumbers refuses numbers the parser would mis-read: it turns a
// number beyond float64's range (1e400) into 0 without an error.
func checkNumbers(q string) error {
	inQuote := byte(0)
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
			continue
		case c == '\'' || c == '"' || c == '`':
			inQuote = c
			continue
		case c < '0' || c > '9' || i > 0 && isWordByte(q[i-1]) && q[i-1] != '.':
			continue
		}
		if i > 0 && q[i-1] == '.' && (i < 2 || isWordByte(q[i-2])) {
			continue // part of a name such as spec.a.0
		}
		j := i
		for j < len(q) && (q[j] >= '0' && q[j] <= '9' || q[j] == '.') {
			j++
		}
		if j < len(q) && (q[j] == 'e' || q[j] == 'E') {
			k := j + 1
			if k < len(q) && (q[k] == '+' || q[k] == '-') {
				k++
			}
			if k < len(q) && q[k] >= '0' && q[k] <= '9' {
				for j = k; j < len(q) && q[j] >= '0' && q[j] <= '9'; j++ {
				}
			}
		}
		num := q[i:j]
		if f, err := strconv.ParseFloat(num, 64); err != nil && errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
			return errorf("the number %s is out of range; search numbers must fit a 64-bit float (about ±1.8e308)", truncateText(num, 40))
		}
		i = j - 1
	}
	return nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func describe(n *tsl.TSLNode) string {
	if n == nil {
		return "nothing"
	}
	switch n.Type() {
	case tsl.KindIdentifier:
		s, _ := n.AsString()
		return "the field " + s
	case tsl.KindNullLiteral:
		return "null"
	case tsl.KindBinaryExpr, tsl.KindUnaryExpr:
		op, _ := n.AsExprOp()
		return "an expression using " + operatorName(op.Operator)
	case tsl.KindArrayLiteral:
		return "a list"
	}
	return "a " + strings.ToLower(n.Type().String()) + " value"
}

func operatorName(op tsl.Operator) string {
	switch op {
	case tsl.OpEQ:
		return "="
	case tsl.OpNE:
		return "!="
	case tsl.OpLT:
		return "<"
	case tsl.OpLE:
		return "<="
	case tsl.OpGT:
		return ">"
	case tsl.OpGE:
		return ">="
	case tsl.OpLike:
		return "like"
	case tsl.OpILike:
		return "ilike"
	case tsl.OpIn:
		return "in"
	case tsl.OpBetween:
		return "between"
	case tsl.OpIs:
		return "is"
	case tsl.OpREQ:
		return "~="
	case tsl.OpRNE:
		return "~!"
	case tsl.OpPlus:
		return "+"
	case tsl.OpMinus:
		return "-"
	case tsl.OpStar:
		return "*"
	case tsl.OpSlash:
		return "/"
	case tsl.OpPercent:
		return "%"
	case tsl.OpLen:
		return "len"
	case tsl.OpAny:
		return "any"
	case tsl.OpAll:
		return "all"
	case tsl.OpSum:
		return "sum"
	}
	return strings.ToLower(op.String())
}
