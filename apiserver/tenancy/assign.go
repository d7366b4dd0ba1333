package tenancy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// CheckTenancy validates a tenancy a system caller assigns to a resource
// stored before the tenancy file was in place (the body of PUT
// .../tenancy, in the shape the API returns a resource's tenancy), by the
// rules Resolve applies to what a tenant sends: every key one of the
// file's dimensions, every required one present, each value valid. It
// returns one problem per field (the dimension's key), in key order; none
// when the tenancy is one a tenant could have.
func (c *Config) CheckTenancy(t map[string]string) []Problem {
	var ps []Problem
	known := make(map[string]bool, len(c.Dimensions))
	for _, d := range c.Dimensions {
		known[d.Key] = true
		v, present := t[d.Key]
		switch {
		case !present && d.Required:
			ps = append(ps, Problem{Field: d.Key, Message: fmt.Sprintf("the tenancy dimension %s is required", d.Key),
				Fix: "give it the value its tenant sends in " + d.Source()})
		case present && !ValidValue(v):
			ps = append(ps, Problem{Field: d.Key, Message: invalidValue(d, v), Fix: "send the value its tenant sends in " + d.Source()})
		}
	}
	for k := range t {
		if !known[k] {
			ps = append(ps, Problem{Field: clip(k), Message: fmt.Sprintf("%s is not a dimension of the tenancy file", clip(k)),
				Fix: "use the file's dimensions: " + c.dimensionList()})
		}
	}
	slices.SortFunc(ps, func(a, b Problem) int { return cmp.Compare(a.Field, b.Field) })
	return ps
}

// invalidValue says why a dimension's value is refused, in the same words
// for a tenant's request (Resolve) and an assigned tenancy.
func invalidValue(d Dimension, v string) string {
	return fmt.Sprintf("the tenancy dimension %s (%s) is %q: it must be 1 to %d letters, digits, '.', '_' or '-'",
		d.Key, d.Source(), clip(v), MaxValueLength)
}

// dimensionList names the file's dimensions, the required ones marked.
func (c *Config) dimensionList() string {
	names := make([]string, 0, len(c.Dimensions))
	for _, d := range c.Dimensions {
		if d.Required {
			names = append(names, d.Key+" (required)")
		} else {
			names = append(names, d.Key)
		}
	}
	return strings.Join(names, ", ")
}
