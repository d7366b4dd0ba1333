package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/resource"
)

// changesOf summarises the log after a version: "TYPE id" per change.
func changesOf(ctx context.Context, t *testing.T, s store.Store, after int64) []string {
	t.Helper()
	cs, err := s.ReadChanges(ctx, store.ChangeQuery{After: after})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(cs))
	last := after
	for _, c := range cs {
		if c.Seq <= last {
			t.Fatalf("change %d after %d: versions must grow", c.Seq, last)
		}
		last = c.Seq
		out = append(out, c.Type+" "+c.Resource.ID)
	}
	return out
}

func newest(t *testing.T, s store.Store) int64 {
	t.Helper()
	w, err := s.ChangeWindow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return w.Newest
}

func TestChangeLogWrittenWithEachChange(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := newest(t, s)
		create(t, s, cluster("c1", "alpha"), nodePool("n1", "c1", "pool"))
		inTx := func(fn func(tx store.Tx) error) {
			t.Helper()
			if err := s.InTx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		// An UpdateState that moves only last_updated_time is no change;
		// one that moves a status is.
		inTx(func(tx store.Tx) error {
			r, err := tx.LockResource(ctx, resource.KindCluster, "c1")
			if err != nil {
				return err
			}
			r.Status.Conditions[0].LastUpdatedTime = now.Add(time.Minute)
			return tx.UpdateState(ctx, r)
		})
		inTx(func(tx store.Tx) error {
			r, err := tx.LockResource(ctx, resource.KindCluster, "c1")
			if err != nil {
				return err
			}
			r.Status.Conditions[0].Status = resource.StatusTrue
			return tx.UpdateState(ctx, r)
		})
		// Created then removed in one transaction: never visible.
		inTx(func(tx store.Tx) error {
			if err := tx.CreateResource(ctx, cluster("c2", "beta")); err != nil {
				return err
			}
			return tx.RemoveResource(ctx, "c2")
		})
		// A rolled-back change leaves nothing either.
		_ = s.InTx(ctx, func(tx store.Tx) error {
			if err := tx.CreateResource(ctx, cluster("c3", "gamma")); err != nil {
				return err
			}
			return fmt.Errorf("roll back")
		})
		// Removing a parent removes its children: a change each.
		inTx(func(tx store.Tx) error { return tx.RemoveResource(ctx, "c1") })
		got := strings.Join(changesOf(ctx, t, s, start), ", ")
		want := "ADDED c1, ADDED n1, MODIFIED c1, DELETED c1, DELETED n1"
		if got != want {
			t.Errorf("change log = %s, want %s", got, want)
		}
		select {
		case <-s.ChangeSignal():
		default:
			t.Error("no change signal after committed changes")
		}
	})
}

func TestChangeLogScopeSearchAndPruning(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		start := newest(t, s)
		acme, globex := cluster("a1", "alpha"), cluster("g1", "alpha")
		acme.Tenancy, globex.Tenancy = map[string]string{"org": "acme"}, map[string]string{"org": "globex"}
		globex.Labels = map[string]string{"env": "prod"}
		create(t, s, acme, globex)
		asAcme := tenancy.WithCaller(ctx, tenancy.Caller{Key: "org=acme", Tenancy: acme.Tenancy})
		if got := strings.Join(changesOf(asAcme, t, s, start), ", "); got != "ADDED a1" {
			t.Errorf("acme's changes = %s, want only ADDED a1", got)
		}
		where, err := search.Translate("labels.env='prod'", s.Dialect(), search.Options{Table: "resources"})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.ReadChanges(ctx, store.ChangeQuery{After: start, Where: where})
		if err != nil || len(cs) != 1 || cs[0].Resource.ID != "g1" || cs[0].Tenant != "org=globex" {
			t.Fatalf("changes matching labels.env='prod' = %+v, %v; want g1's, of org=globex", cs, err)
		}
		all, err := s.ReadChanges(ctx, store.ChangeQuery{After: start})
		if err != nil {
			t.Fatal(err)
		}
		seqs := []int64{all[0].Seq, all[1].Seq}
		m, err := s.MatchChanges(ctx, seqs, where)
		if err != nil || m[all[0].Seq] || !m[all[1].Seq] {
			t.Errorf("MatchChanges = %v, %v; want only %d", m, err, all[1].Seq)
		}
		if m, err := s.MatchChanges(asAcme, seqs, search.Where{}); err != nil || len(m) != 1 || !m[all[0].Seq] {
			t.Errorf("MatchChanges as acme = %v, %v; want its own change only", m, err)
		}

		w, err := s.ChangeWindow(ctx)
		if err != nil || !w.Resumable(start) || w.Resumable(w.Newest+1) {
			t.Fatalf("window %+v (%v): want %d resumable and %d not", w, err, start, w.Newest+1)
		}
		// Pruning everything keeps the newest change.
		if _, err := s.PruneChanges(ctx, time.Now().Add(time.Hour), 1); err != nil {
			t.Fatal(err)
		}
		w, err = s.ChangeWindow(ctx)
		if err != nil || w.Oldest != w.Newest || w.Resumable(start) || !w.Resumable(w.Newest) || !w.Resumable(w.Newest-1) {
			t.Errorf("after pruning, window %+v (%v): want only the newest kept, and resuming from before it refused", w, err)
		}
		// Versions go on growing after a prune.
		create(t, s, cluster("a2", "beta"))
		if n := newest(t, s); n <= w.Newest {
			t.Errorf("a change after pruning has version %d, not above %d", n, w.Newest)
		}
	})
}

func TestChangeWindowResumable(t *testing.T) {
	tests := []struct {
		w    store.ChangeWindow
		v    int64
		want bool
	}{
		{store.ChangeWindow{}, 0, true},
		{store.ChangeWindow{}, 1, false},
		{store.ChangeWindow{Oldest: 1, Newest: 5}, 0, true},
		{store.ChangeWindow{Oldest: 4, Newest: 5}, 3, true},
		{store.ChangeWindow{Oldest: 4, Newest: 5}, 2, false},
		{store.ChangeWindow{Oldest: 4, Newest: 5}, 5, true},
		{store.ChangeWindow{Oldest: 4, Newest: 5}, 6, false},
		{store.ChangeWindow{Oldest: 1, Newest: 5}, -1, false},
	}
	for _, tt := range tests {
		if got := tt.w.Resumable(tt.v); got != tt.want {
			t.Errorf("%+v.Resumable(%d) = %v, want %v", tt.w, tt.v, got, tt.want)
		}
	}
}
