package watch

import (
	"errors"
	"testing"
)

func TestCaps(t *testing.T) {
	type step struct {
		release bool
		tenant  string
		// want: "" admitted, "tenant" or "replica" refused by that cap.
		want string
	}
	tests := []struct {
		name           string
		max, perTenant int
		steps          []step
	}{
		{"replica cap", 2, 5, []step{{tenant: "a"}, {tenant: "b"}, {tenant: "c", want: "replica"}, {release: true, tenant: "a"}, {tenant: "c"}}},
		{"tenant cap", 10, 2, []step{{tenant: "a"}, {tenant: "a"}, {tenant: "a", want: "tenant"}, {tenant: "b"}, {release: true, tenant: "a"}, {tenant: "a"}}},
		{"no tenancy counts against the replica only", 3, 1, []step{{}, {}, {}, {want: "replica"}}},
		{"the replica cap is checked first", 2, 1, []step{{tenant: "a"}, {tenant: "b"}, {tenant: "a", want: "replica"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCaps(tt.max, tt.perTenant)
			for i, s := range tt.steps {
				if s.release {
					c.release(s.tenant)
					continue
				}
				err := c.acquire(s.tenant)
				var ce *CapError
				got := ""
				if errors.As(err, &ce) {
					got = map[bool]string{true: "tenant", false: "replica"}[ce.PerTenant]
				} else if err != nil {
					t.Fatalf("step %d: acquire(%q) = %v, not a *CapError", i, s.tenant, err)
				}
				if got != s.want {
					t.Fatalf("step %d: acquire(%q) refused by %q, want %q", i, s.tenant, got, s.want)
				}
			}
		})
	}
}

func TestCapsReleaseForgetsIdleTenants(t *testing.T) {
	c := newCaps(10, 10)
	for range 3 {
		if err := c.acquire("a"); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		c.release("a")
	}
	if c.total != 0 || len(c.byTenant) != 0 {
		t.Errorf("after releasing every watch: total %d, tenants %v; want 0 and none", c.total, c.byTenant)
	}
}
