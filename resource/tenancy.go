package resource

import (
	"slices"
	"strings"
)

// TenancyKey is the canonical form of a tenancy, the one the API stores,
// compares and hands to Temporal: key=value pairs sorted by key and joined
// by commas ("org=acme,project=web"); "" for none. Sorting makes the form
// independent of the order the tenancy file lists its dimensions in, so
// reordering them does not hide resources. Keys and values never hold '='
// or ',' (package tenancy validates both).
func TenancyKey(t map[string]string) string {
	if len(t) == 0 {
		return ""
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(t[k])
	}
	return b.String()
}

// ParseTenancyKey reverses TenancyKey; nil for "". A pair without '=' (no
// stored key has one) is kept with an empty value rather than dropped, so
// nothing the database holds disappears from a response.
func ParseTenancyKey(key string) map[string]string {
	if key == "" {
		return nil
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(key, ",") {
		k, v, _ := strings.Cut(pair, "=")
		out[k] = v
	}
	return out
}
