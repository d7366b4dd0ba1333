package search

import (
	"strings"
)

// OrderTerm is one ORDER BY term on a fixed column.
type OrderTerm struct {
	Column string
	Desc   bool
}

// DefaultOrder is created_time desc.
var DefaultOrder = []OrderTerm{{Column: "created_time", Desc: true}}

// ParseOrder reads both forms the contract accepts:
//
//	orderBy=<field>&order=asc|desc            (seed 001)
//	order=<field> [asc|desc][, <field> [asc|desc]...]   (newer form)
//
// orderBy may itself carry directions ("name desc, id"); `order`, when it is
// a bare direction, applies to the terms that do not.
func ParseOrder(orderBy, order string) ([]OrderTerm, error) {
	orderBy, order = strings.TrimSpace(orderBy), strings.TrimSpace(order)
	direction, orderIsDirection := parseDirection(order)
	switch {
	case orderBy == "" && order == "":
		return DefaultOrder, nil
	case orderBy == "" && orderIsDirection:
		return []OrderTerm{{Column: "created_time", Desc: direction}}, nil
	case orderBy == "":
		return parseTerms("order", order, false)
	case order != "" && !orderIsDirection:
		return nil, errorf("order must be asc or desc when orderBy is given, not %q", order)
	}
	return parseTerms("orderBy", orderBy, direction)
}

func parseDirection(s string) (desc bool, ok bool) {
	switch strings.ToLower(s) {
	case "asc":
		return false, true
	case "desc":
		return true, true
	}
	return false, false
}

func parseTerms(param, list string, defaultDesc bool) ([]OrderTerm, error) {
	var terms []OrderTerm
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		words := strings.Fields(item)
		if len(words) == 0 || len(words) > 2 {
			return nil, errorf("%s: %q is not <field> [asc|desc]", param, strings.TrimSpace(item))
		}
		column := words[0]
		if _, ok := columns[column]; !ok {
			return nil, errorf("%s: cannot order by %q; use one of id, name, generation, created_time, updated_time, deleted_time, created_by, updated_by", param, words[0])
		}
		desc := defaultDesc
		if len(words) == 2 {
			d, ok := parseDirection(words[1])
			if !ok {
				return nil, errorf("%s: direction %q must be asc or desc", param, words[1])
			}
			desc = d
		}
		if seen[column] {
			return nil, errorf("%s: %s is listed twice", param, column)
		}
		seen[column] = true
		terms = append(terms, OrderTerm{Column: column, Desc: desc})
	}
	return terms, nil
}
