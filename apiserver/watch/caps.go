package watch

import "fmt"

// Default caps and buffer.
const (
	DefaultMaxWatchers  = 1000
	DefaultMaxPerTenant = 100
	DefaultBuffer       = 256
)

// CapError is a watch refused by a cap: PerTenant says it was the
// caller's tenancy's (the caller should close a watch), else the
// replica's (another replica, or later, may have room).
type CapError struct {
	PerTenant bool
	Limit     int
}

func (e *CapError) Error() string {
	if e.PerTenant {
		return fmt.Sprintf("this tenancy already holds %d watches on this replica, the limit (--watch-max-per-tenant); close one or resume later", e.Limit)
	}
	return fmt.Sprintf("this replica already serves %d watches, the limit (--watch-max); retry later or on another replica", e.Limit)
}

// caps counts the watches of a replica and of each tenancy. A caller
// without tenancy (no tenancy file, or a system caller) counts against
// the replica's cap only.
type caps struct {
	max, perTenant int
	total          int
	byTenant       map[string]int
}

func newCaps(limit, perTenant int) caps {
	return caps{max: limit, perTenant: perTenant, byTenant: map[string]int{}}
}

// acquire counts a new watch of tenant, or says which cap refuses it.
func (c *caps) acquire(tenant string) error {
	if c.max > 0 && c.total >= c.max {
		return &CapError{Limit: c.max}
	}
	if tenant != "" && c.perTenant > 0 && c.byTenant[tenant] >= c.perTenant {
		return &CapError{PerTenant: true, Limit: c.perTenant}
	}
	c.total++
	if tenant != "" {
		c.byTenant[tenant]++
	}
	return nil
}

// release uncounts a watch acquire counted.
func (c *caps) release(tenant string) {
	c.total--
	if tenant == "" {
		return
	}
	if c.byTenant[tenant]--; c.byTenant[tenant] <= 0 {
		delete(c.byTenant, tenant)
	}
}
