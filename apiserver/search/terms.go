package search

import (
	"strings"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
)

// TermPlan answers a search from the term index (resource_terms) without
// reading the stored documents of resources that do not match: the
// resources holding every term of Terms, and passing Residual, are
// exactly the search's matches. Only a conjunction of equalities on
// labels, condition statuses and spec values has a plan; anything else
// (or, not, in, !=, ranges, other fields) is answered by the Where's SQL.
//
// The terms are exact: a term is held exactly when the stored document
// compares equal (the same text, the same boolean, the same status),
// which TestIndexedSearchMatchesExact checks against the SQL form. On
// SQLite a number is the exception: its term holds the value rounded to
// SQLite's 15 digits, so a number's equality also goes into Residual.
// PostgreSQL's index holds label and condition terms only (schema
// version 7): its spec equality follows PostgreSQL's own rules (a quoted
// '3' also matches the number 3, a numeric segment also names an object
// key), which no single term renders. There a spec equality is all
// Residual, checked on the rows the label and condition terms leave; a
// search of spec equalities alone has no terms, so no plan, and keeps
// the GIN indexes.
type TermPlan struct {
	// Terms are SQL expressions, each yielding one term, with their
	// values. The store walks the term the fewest resources hold; labels
	// and spec values come first, since a status such as Ready=True may be
	// held by half the fleet, to win ties.
	Terms []Where
	// Residual is checked against the resources row (its columns
	// qualified by Options.Table); empty when the terms decide alone.
	Residual Where
}

// planTerms returns the term plan of a parsed search, or nil when it has
// none. The search has already been translated, so its fields and values
// are valid.
func planTerms(tree *tsl.TSLNode, d Dialect, opts Options) *TermPlan {
	var leaves []tsl.TSLExpressionOp
	if !conjuncts(tree, &leaves, 0) {
		return nil
	}
	var first, conditions []Where
	var residual []string
	var residualArgs []any
	for _, op := range leaves {
		if op.Operator != tsl.OpEQ || op.Left.Type() != tsl.KindIdentifier || op.Right == nil {
			return nil
		}
		t := translator{dialect: d, opts: opts}
		name, _ := op.Left.AsString()
		f, err := t.resolve(name)
		if err != nil {
			return nil
		}
		lit, err := readLiteral(op.Right)
		if err != nil || lit.isTime {
			return nil
		}
		switch f.kind {
		case labelField:
			if lit.isNum || lit.isBool {
				return nil
			}
			first = append(first, Where{SQL: t.bind(labelTerm(f.key, lit.text)), Args: t.args})
		case conditionField:
			if lit.isBool {
				lit.text = map[bool]string{true: "True", false: "False"}[lit.b]
			}
			if lit.text != "True" && lit.text != "False" {
				return nil
			}
			conditions = append(conditions, Where{SQL: t.bind(ConditionTerm(f.cond, lit.text)), Args: t.args})
		case specField:
			if d == SQLite {
				first = append(first, Where{SQL: t.specTerm(f, lit), Args: t.args})
			}
			if lit.isNum || d == Postgres {
				exact := translator{dialect: d, opts: opts}
				sql, err := exact.specCompare(f, tsl.OpEQ, lit)
				if err != nil {
					return nil
				}
				residual = append(residual, sql)
				residualArgs = append(residualArgs, exact.args...)
			}
		default:
			return nil
		}
	}
	if len(first)+len(conditions) == 0 {
		return nil
	}
	p := &TermPlan{Terms: append(first, conditions...)}
	if len(residual) > 0 {
		p.Residual = Where{SQL: "(" + strings.Join(residual, " AND ") + ")", Args: residualArgs}
	}
	return p
}

// conjuncts appends the comparisons of a tree of ands to leaves; false
// when the tree holds anything else (or, not), or is deeper than the
// translator allows.
func conjuncts(n *tsl.TSLNode, leaves *[]tsl.TSLExpressionOp, depth int) bool {
	if n == nil || depth > maxDepth {
		return false
	}
	op, ok := n.AsExprOp()
	if !ok {
		return false
	}
	if op.Operator == tsl.OpAnd {
		return conjuncts(op.Left, leaves, depth+1) && conjuncts(op.Right, leaves, depth+1)
	}
	*leaves = append(*leaves, op)
	return true
}
