package resource

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// A resource's tenancy is written as encoding/json writes it, and only
// when it has one: without tenancy a body is what it always was.
func TestAppendJSONWritesTheTenancy(t *testing.T) {
	for name, tenancy := range map[string]map[string]string{
		"none":        nil,
		"empty":       {},
		"one":         {"org": "acme"},
		"two, sorted": {"project": "web", "org": "acme"},
	} {
		r := sample()
		r.Tenancy = tenancy
		want, err := json.Marshal(reflected(r))
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.AppendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: AppendJSON\n%s\nencoding/json\n%s (%v)", name, got, want, err)
		}
		if has := strings.Contains(string(got), `"tenancy"`); has != (len(tenancy) > 0) {
			t.Errorf("%s: tenancy in the body %t, want %t", name, has, len(tenancy) > 0)
		}
	}
}

func TestTenancyKey(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{}, ""},
		{map[string]string{"org": "acme"}, "org=acme"},
		{map[string]string{"project": "web", "org": "acme", "env": "prod"}, "env=prod,org=acme,project=web"},
	} {
		key := TenancyKey(tc.in)
		if key != tc.want {
			t.Errorf("TenancyKey(%v) = %q, want %q", tc.in, key, tc.want)
		}
		if back := ParseTenancyKey(key); len(tc.in) > 0 && !maps.Equal(back, tc.in) || len(tc.in) == 0 && back != nil {
			t.Errorf("ParseTenancyKey(%q) = %v, want %v", key, back, tc.in)
		}
	}
}
