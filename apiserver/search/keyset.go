package search

import (
	"fmt"
	"strings"
	"time"
)

// ColumnType is what the values of an orderable column are.
type ColumnType int

const (
	TextColumn ColumnType = iota
	IntColumn
	TimeColumn
)

// Column describes an orderable column: the type of its values and
// whether it may be NULL.
type Column struct {
	Type     ColumnType
	Nullable bool
}

var columns = map[string]Column{
	"id":           {Type: TextColumn},
	"name":         {Type: TextColumn},
	"generation":   {Type: IntColumn},
	"created_time": {Type: TimeColumn},
	"updated_time": {Type: TimeColumn},
	"deleted_time": {Type: TimeColumn, Nullable: true},
	"created_by":   {Type: TextColumn},
	"updated_by":   {Type: TextColumn},
}

// ColumnOf describes an orderable column; ok is false for any other name.
func ColumnOf(name string) (Column, bool) {
	c, ok := columns[name]
	return c, ok
}

// WithTieBreak returns the order a list is read in: the given terms (the
// default order when there are none), then id in the last term's direction,
// so that no two rows are ever equal and pages neither overlap nor skip.
func WithTieBreak(order []OrderTerm) []OrderTerm {
	if len(order) == 0 {
		order = DefaultOrder
	}
	out := make([]OrderTerm, 0, len(order)+1)
	for _, o := range order {
		if o.Column == "id" {
			// id is unique: nothing after it can matter.
			return append(out, o)
		}
		out = append(out, o)
	}
	return append(out, OrderTerm{Column: "id", Desc: out[len(out)-1].Desc})
}

// OrderBy is the ORDER BY list of a full order (see WithTieBreak). A NULL
// sorts as the smallest value on both backends (SQLite's default; named
// explicitly because PostgreSQL's is the opposite), so that a keyset
// position before or after a NULL means the same thing everywhere.
func OrderBy(table string, order []OrderTerm) string {
	parts := make([]string, len(order))
	for i, o := range order {
		s := table + "." + o.Column
		if o.Desc {
			s += " DESC"
		}
		if columns[o.Column].Nullable {
			if o.Desc {
				s += " NULLS LAST"
			} else {
				s += " NULLS FIRST"
			}
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

// Cursor is a position in a full order: the values, in order, of the row
// the position follows (nil for NULL; otherwise time.Time, int64 or string
// as the column's type says).
type Cursor []any

// After is the WHERE clause selecting the rows that follow c in order (a
// full order, see WithTieBreak). Every value is a bound parameter.
//
// When every term has the same direction and none may be NULL, the clause
// is a row-value comparison, (a, b, id) < (?, ?, ?), which both PostgreSQL
// and SQLite turn into a range scan of an index in that order, so a page
// deep in a list costs what the first one does. Otherwise it is the
// equivalent expansion: a > ? OR (a = ? AND (b > ? OR ...)).
func After(table string, order []OrderTerm, c Cursor) (Where, error) {
	if len(c) != len(order) {
		return Where{}, fmt.Errorf("position has %d values for an order of %d terms", len(c), len(order))
	}
	for i, o := range order {
		col, ok := columns[o.Column]
		if !ok {
			return Where{}, fmt.Errorf("cannot order by %q", o.Column)
		}
		if err := checkValue(col, c[i]); err != nil {
			return Where{}, fmt.Errorf("%s: %w", o.Column, err)
		}
	}
	if w, ok := afterRowValue(table, order, c); ok {
		return w, nil
	}
	var w Where
	w.SQL = afterExpanded(table, order, c, &w.Args)
	return w, nil
}

func checkValue(col Column, v any) error {
	switch v.(type) {
	case nil:
		if !col.Nullable {
			return fmt.Errorf("NULL in a column that cannot be NULL")
		}
		return nil
	case time.Time:
		if col.Type == TimeColumn {
			return nil
		}
	case int64:
		if col.Type == IntColumn {
			return nil
		}
	case string:
		if col.Type == TextColumn {
			return nil
		}
	}
	return fmt.Errorf("value %v (%T) does not fit the column", v, v)
}

func afterRowValue(table string, order []OrderTerm, c Cursor) (Where, bool) {
	for i, o := range order {
		if o.Desc != order[0].Desc || columns[o.Column].Nullable || c[i] == nil {
			return Where{}, false
		}
	}
	op := ">"
	if order[0].Desc {
		op = "<"
	}
	cols := make([]string, len(order))
	marks := make([]string, len(order))
	for i, o := range order {
		cols[i] = table + "." + o.Column
		marks[i] = "?"
	}
	if len(order) == 1 {
		return Where{SQL: cols[0] + " " + op + " ?", Args: []any{c[0]}}, true
	}
	// The bound on the first column alone is implied, but it is what a
	// planner that does not read row values as an index range still can.
	return Where{
		SQL:  fmt.Sprintf("%s %s= ? AND (%s) %s (%s)", cols[0], op, strings.Join(cols, ", "), op, strings.Join(marks, ", ")),
		Args: append([]any{c[0]}, c...),
	}, true
}

// afterExpanded writes "term 0 is past c[0], or equal to it and the rest
// is past", recursively; NULL is the smallest value (see OrderBy).
func afterExpanded(table string, order []OrderTerm, c Cursor, args *[]any) string {
	col := table + "." + order[0].Column
	v := c[0]
	var past, equal string
	switch {
	case v == nil && !order[0].Desc:
		past, equal = col+" IS NOT NULL", col+" IS NULL"
	case v == nil:
		past, equal = "", col+" IS NULL" // nothing sorts after NULL going down
	case !order[0].Desc:
		past, equal = col+" > ?", col+" = ?"
		*args = append(*args, v)
	default:
		past = col + " < ?"
		if columns[order[0].Column].Nullable {
			past = "(" + past + " OR " + col + " IS NULL)"
		}
		equal = col + " = ?"
		*args = append(*args, v)
	}
	if len(order) == 1 {
		if past == "" {
			return "1 = 0"
		}
		return past
	}
	if v != nil {
		*args = append(*args, v) // the equality's own parameter
	}
	rest := afterExpanded(table, order[1:], c[1:], args)
	if past == "" {
		return "(" + equal + " AND (" + rest + "))"
	}
	return "(" + past + " OR (" + equal + " AND (" + rest + ")))"
}
