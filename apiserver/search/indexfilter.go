// Index filters: the resource_terms terms (SQLite) and the spec
// containment (PostgreSQL) that let an equality be served by an index.

package search

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
)

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
	col := t.specColumn()
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
