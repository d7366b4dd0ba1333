package tenancy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// CheckTenancy accepts exactly the tenancies a tenant could resolve to,
// and names each field it refuses.
func TestCheckTenancy(t *testing.T) {
	gw := mustParse(t, gateway, false)
	for _, tc := range []struct {
		name    string
		tenancy map[string]string
		fields  []string // refused, in order; none: accepted
		message string   // a substring of the first problem's message
	}{
		{name: "the required dimension", tenancy: map[string]string{"org": "acme"}},
		{name: "both dimensions", tenancy: map[string]string{"org": "acme", "project": "web"}},
		{name: "every allowed character, 63 of them", tenancy: map[string]string{"org": "A.b_C-9" + strings.Repeat("x", 56)}},
		{name: "nothing", tenancy: map[string]string{}, fields: []string{"org"}, message: "the tenancy dimension org is required"},
		{name: "nil", tenancy: nil, fields: []string{"org"}, message: "is required"},
		{name: "only the optional dimension", tenancy: map[string]string{"project": "web"}, fields: []string{"org"}, message: "is required"},
		{name: "an empty value", tenancy: map[string]string{"org": ""}, fields: []string{"org"}, message: "it must be 1 to 63 letters"},
		{name: "64 characters", tenancy: map[string]string{"org": strings.Repeat("a", 64)}, fields: []string{"org"}, message: "1 to 63"},
		{name: "a space", tenancy: map[string]string{"org": "ac me"}, fields: []string{"org"}, message: `is "ac me"`},
		{name: "the canonical form's separators", tenancy: map[string]string{"org": "acme,project=x"}, fields: []string{"org"}, message: "letters, digits"},
		{name: "an invalid optional value", tenancy: map[string]string{"org": "acme", "project": "w/b"}, fields: []string{"project"}, message: "X-Tenant-Project"},
		{name: "a key that is no dimension", tenancy: map[string]string{"org": "acme", "team": "x"}, fields: []string{"team"},
			message: "team is not a dimension of the tenancy file"},
		{name: "a dimension's key in another case", tenancy: map[string]string{"Org": "acme"}, fields: []string{"Org", "org"}},
		{name: "every problem at once, by field", tenancy: map[string]string{"zone": "a", "project": "", "alpha": "b"},
			fields: []string{"alpha", "org", "project", "zone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := gw.CheckTenancy(tc.tenancy)
			var fields []string
			for _, p := range ps {
				fields = append(fields, p.Field)
				if p.Message == "" || p.Fix == "" {
					t.Errorf("a problem without message or fix: %+v", p)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("refused fields %v, want %v (%v)", fields, tc.fields, ps)
			}
			if tc.message != "" && !strings.Contains(ps[0].Message, tc.message) {
				t.Errorf("message %q, want it to hold %q", ps[0].Message, tc.message)
			}
			if len(ps) > 0 {
				return
			}
			// A tenant sending these values resolves to the same tenancy,
			// so it sees what was assigned.
			h := http.Header{}
			for _, d := range gw.Dimensions {
				if v, ok := tc.tenancy[d.Key]; ok {
					h.Set(d.Header, v)
				}
			}
			c, refusal := gw.Resolve(Request{Header: h.Values})
			if refusal != nil || c.Key != resource.TenancyKey(tc.tenancy) {
				t.Errorf("a tenant sending %v resolves to %+v (%v), want %s", tc.tenancy, c, refusal, resource.TenancyKey(tc.tenancy))
			}
		})
	}
	// A refused value is echoed clipped, as Resolve echoes it.
	long := strings.Repeat("é", 100)
	if ps := gw.CheckTenancy(map[string]string{"org": long}); len(ps) != 1 || len(ps[0].Message) > 300 {
		t.Errorf("a long value: %v", ps)
	}
	if ps := gw.CheckTenancy(map[string]string{"org": "acme", strings.Repeat("k", 200): "v"}); len(ps) != 1 || len(ps[0].Field) > 70 {
		t.Errorf("a long key: %v", ps)
	}
}
