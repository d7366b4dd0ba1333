// Adoption: a tenancy given to resources stored before the tenancy file
// was in place, which belong to none.

package store

import (
	"context"
	"fmt"

	"github.com/hyperfleet/hyperfleet/resource"
)

// Statements of AssignTenancy. Only a row without a tenancy takes one: a
// tenancy, once set, never changes (schema version 10). The tenant's term
// is the one schema version 10's trigger writes when a row is inserted
// with a tenancy, with the row's own kind and creation time (what a
// tenant's list walks), and inserting it moves the term's kept count as
// any term does (term_stats on SQLite, term_deltas on PostgreSQL).
const (
	assignTenancySQL = "UPDATE resources SET tenant = ?, updated_time = ?, updated_by = ? WHERE id = ? AND tenant = ''"
	tenantTermSQL    = "INSERT INTO resource_terms (resource_id, term, kind, created_time) " +
		"SELECT id, 't:' || tenant, kind, created_time FROM resources WHERE id = ? AND tenant <> '' ON CONFLICT DO NOTHING"
	// An outbox row not yet handed over starts its workflow with the
	// tenancy it carries (HyperFleetTenant).
	outboxTenancySQL = "UPDATE outbox SET tenant = ? WHERE resource_id = ?"
)

func (t *gormTx) AssignTenancy(ctx context.Context, rs ...*resource.Resource) error {
	db := t.db.WithContext(ctx)
	for _, r := range rs {
		row, err := toRow(r)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", r.Kind, r.ID, err)
		}
		if row.Tenant == "" {
			return fmt.Errorf("assign no tenancy to %s %s: a tenancy is required", r.Kind, r.ID)
		}
		res := db.Exec(assignTenancySQL, row.Tenant, row.UpdatedTime, row.UpdatedBy, r.ID)
		if res.Error != nil {
			if isUniqueViolation(res.Error) {
				return ErrNameConflict
			}
			return fmt.Errorf("assign tenancy %s to %s %s: %w", row.Tenant, r.Kind, r.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		if err := db.Exec(tenantTermSQL, r.ID).Error; err != nil {
			return fmt.Errorf("index tenancy %s of %s %s: %w", row.Tenant, r.Kind, r.ID, err)
		}
		if err := db.Exec(outboxTenancySQL, row.Tenant, r.ID).Error; err != nil {
			return fmt.Errorf("carry tenancy %s to the outbox rows of %s %s: %w", row.Tenant, r.Kind, r.ID, err)
		}
		t.noteChange(ChangeModified, row)
		t.noteLocked(r)
	}
	return nil
}
