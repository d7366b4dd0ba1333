// One comparison in SQL: reading the literal on the right, checking it
// against the field's type and rendering the dialect's expression.

package search

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
)

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
	case referenceField:
		return t.referenceCompare(f, op, lit)
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

// specColumn is the spec document as the dialect's JSON functions read
// it: on PostgreSQL the jsonb column generated from the stored text.
func (t *translator) specColumn() string {
	if t.dialect == Postgres {
		return t.opts.Table + "." + PostgresSpecColumn
	}
	return t.opts.Table + ".spec"
}

func (t *translator) specCompare(f field, op tsl.Operator, lit literal) (string, error) {
	col := t.specColumn()
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

// referenceCompare finds the resources with a link to the target id
// (of f.refType, or of any type): = and in find the referrers, != the
// others.
func (t *translator) referenceCompare(f field, op tsl.Operator, lit literal) (string, error) {
	if op != tsl.OpEQ && op != tsl.OpNE {
		return "", errorf("%s only compares with =, != or in", f.name)
	}
	if lit.isNum || lit.isBool || lit.isTime {
		return "", errorf("%s is an id; quote the value, e.g. %s = '%s'", f.name, f.name, lit.text)
	}
	var exists string
	switch {
	case t.opts.Indexed:
		exists = "EXISTS (SELECT 1 FROM resource_references AS rr WHERE rr.resource_id = " + t.opts.Table + ".id AND rr.target_id = " + t.bind(lit.text)
		if f.refType != "" {
			exists += " AND rr.ref_type = " + t.bind(f.refType)
		}
		exists += ")"
	case t.dialect == Postgres:
		link := map[string]string{"id": lit.text}
		if f.refType != "" {
			link["ref_type"] = f.refType
		}
		doc, _ := json.Marshal([]map[string]string{link})
		exists = t.opts.Table + ".refs @> " + t.bind(string(doc)) + "::jsonb"
	default:
		exists = "EXISTS (SELECT 1 FROM json_each(" + t.opts.Table + ".refs) AS rl WHERE json_extract(rl.value, '$.id') = " + t.bind(lit.text)
		if f.refType != "" {
			exists += " AND json_extract(rl.value, '$.ref_type') = " + t.bind(f.refType)
		}
		exists += ")"
	}
	if op == tsl.OpNE {
		return "(NOT " + exists + ")", nil
	}
	return exists, nil
}

// maxExactInt is the largest integer a search number holds exactly (2^53).
const maxExactInt = 1 << 53
