package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/resource"
)

// A tenant's reads and locks see only its own resources, filtered in SQL:
// another tenant's, and one stored before tenancy, are ErrNotFound as a
// random id is. A system caller and a context with no caller (tenancy off,
// the API's own passes) see every resource.
func TestScopedReadsAndLocks(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		acme, globex := map[string]string{"org": "acme"}, map[string]string{"org": "globex"}
		mine, theirs, old := cluster("c1", "alpha"), cluster("c2", "alpha"), cluster("c0", "before")
		mine.Tenancy, theirs.Tenancy = acme, globex
		pool := nodePool("n1", "c1", "pool")
		pool.Tenancy = acme
		create(t, s, mine, theirs, old, pool)
		acmeCtx := tenancy.WithCaller(ctx, tenancy.Caller{Tenancy: acme, Key: resource.TenancyKey(acme)})
		every := []string{"c0", "c1", "c2", "n1"}
		for _, c := range []struct {
			name string
			ctx  context.Context
			sees []string
		}{
			{"tenant", acmeCtx, []string{"c1", "n1"}},
			{"system caller", tenancy.WithCaller(ctx, tenancy.Caller{System: true}), every},
			{"no caller", ctx, every},
		} {
			for _, r := range []*resource.Resource{mine, theirs, old, pool, nodePool("random", "c1", "none")} {
				want := slices.Contains(c.sees, r.ID)
				got, err := s.GetResource(c.ctx, r.Kind, r.ID)
				checkScoped(t, c.name, "GetResource(kind)", r.ID, want, got, err)
				got, err = s.GetResource(c.ctx, "", r.ID)
				checkScoped(t, c.name, "GetResource(any kind)", r.ID, want, got, err)
				err = s.InTx(c.ctx, func(tx store.Tx) error {
					got, err := tx.LockResource(c.ctx, r.Kind, r.ID)
					checkScoped(t, c.name, "LockResource", r.ID, want, got, err)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			page, err := s.ListResources(c.ctx, store.ListQuery{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range page.Items {
				ids = append(ids, r.ID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, c.sees) || page.Total != int64(len(c.sees)) {
				t.Errorf("%s lists %v (total %d), want %v", c.name, ids, page.Total, c.sees)
			}
		}
		// A tenant asking for another tenancy's list gets nothing.
		page, err := s.ListResources(acmeCtx, store.ListQuery{Kind: resource.KindCluster, Limit: 10, Tenant: resource.TenancyKey(globex)})
		if err != nil || len(page.Items) != 0 || page.Total != 0 {
			t.Errorf("a tenant's list of another tenancy: %d items, total %d, %v", len(page.Items), page.Total, err)
		}
		if s.Backend() == store.BackendPostgres {
			// SQLite's transactions are exclusive, so only PostgreSQL's
			// row locks can show it: a tenant's transaction that asked
			// for another tenant's row does not hold that row's lock.
			lockedElsewhere(acmeCtx, t, s, theirs)
		}
	})
}

func checkScoped(t *testing.T, caller, op, id string, want bool, got *resource.Resource, err error) {
	t.Helper()
	switch {
	case want && (err != nil || got == nil || got.ID != id):
		t.Errorf("%s %s %s: %+v, %v; want it", caller, op, id, got, err)
	case !want && !errors.Is(err, store.ErrNotFound):
		t.Errorf("%s %s %s: %+v, %v; want ErrNotFound", caller, op, id, got, err)
	}
}

// lockedElsewhere holds a transaction of ctx's caller open after it asked
// to lock r, and locks r meanwhile from a context with no caller: that
// must not wait.
func lockedElsewhere(ctx context.Context, t *testing.T, s store.Store, r *resource.Resource) {
	t.Helper()
	asked, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.LockResource(ctx, r.Kind, r.ID)
			close(asked)
			<-release
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("another tenant's lock: %v, want ErrNotFound", err)
			}
			return nil
		})
	}()
	<-asked
	lctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := s.InTx(lctx, func(tx store.Tx) error {
		_, err := tx.LockResource(lctx, r.Kind, r.ID)
		return err
	})
	cancel()
	close(release)
	if err != nil {
		t.Errorf("lock %s while another tenant's transaction asked for it: %v (it holds the row)", r.ID, err)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}
