package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

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

// Writers on two stores of one database (two API replicas) change
// resources at once while a reader tails the log by version, as a watch
// does: the reader must see every change exactly once, each resource's in
// the order they were made, and never a version below one it has passed.
func TestChangeLogNumbersConcurrentWritersInOrder(t *testing.T) {
	for _, cfg := range configs(t) {
		t.Run(cfg.Driver, func(t *testing.T) {
			ctx := context.Background()
			open := func() store.Store {
				cfg := cfg
				cfg.Logger, cfg.ChangeLog = zerolog.Nop(), true
				s, err := store.Open(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				if err := s.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				return s
			}
			replicas := []store.Store{open(), open()}
			start := newest(t, replicas[0])
			const writers, changes = 6, 20
			ids := make([]string, writers)
			for i := range ids {
				ids[i] = fmt.Sprintf("c%d", i)
				create(t, replicas[0], cluster(ids[i], ids[i]))
			}
			// Each change writes its count into the condition's message;
			// two writers share each resource, so its row lock orders them.
			var wg sync.WaitGroup
			errs := make(chan error, writers*2)
			for w := range writers * 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, id := replicas[w%2], ids[w/2]
					for range changes {
						err := s.InTx(ctx, func(tx store.Tx) error {
							r, err := tx.LockResource(ctx, resource.KindCluster, id)
							if err != nil {
								return err
							}
							n, _ := strconv.Atoi(r.Status.Conditions[0].Message)
							r.Status.Conditions[0].Message = strconv.Itoa(n + 1)
							return tx.UpdateState(ctx, r)
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()

			reader := replicas[1]
			last, seen := start, map[string]int{}
			total, want := 0, writers*(1+2*changes)
			deadline := time.Now().Add(time.Minute)
			for total < want && time.Now().Before(deadline) {
				cs, err := reader.ReadChanges(ctx, store.ChangeQuery{After: last})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cs {
					if c.Seq <= last {
						t.Fatalf("version %d read after %d", c.Seq, last)
					}
					last = c.Seq
					total++
					n := 0
					if c.Type != store.ChangeAdded {
						n, _ = strconv.Atoi(c.Resource.Status.Conditions[0].Message)
					}
					if prev, ok := seen[c.Resource.ID]; ok && n != prev+1 {
						t.Fatalf("%s: change %d read after change %d", c.Resource.ID, n, prev)
					}
					seen[c.Resource.ID] = n
				}
				if len(cs) == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
			<-done
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if total != want {
				t.Fatalf("read %d changes, want %d", total, want)
			}
			// Nothing is left unnumbered, and nothing more arrives.
			if cs, err := reader.ReadChanges(ctx, store.ChangeQuery{After: last}); err != nil || len(cs) != 0 {
				t.Fatalf("after every change: %d more (%v)", len(cs), err)
			}
			for _, id := range ids {
				if seen[id] != 2*changes {
					t.Errorf("%s: last change read %d, want %d", id, seen[id], 2*changes)
				}
			}
		})
	}
}

// A database written at schema version 13, where a change got its number
// as it was written, keeps those numbers through version 14; later
// changes number after them.
func TestChangeLogNumbersSurviveVersion14(t *testing.T) {
	for _, cfg := range configs(t) {
		t.Run(cfg.Driver, func(t *testing.T) {
			ctx := context.Background()
			cfg.Logger, cfg.ChangeLog = zerolog.Nop(), true
			s, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := store.MigrateTo(ctx, s, 13); err != nil {
				t.Fatal(err)
			}
			create(t, s, cluster("old", "old"))
			before := newest(t, s)
			if before == 0 {
				t.Fatal("no change numbered at version 13")
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("upgrade to version %d: %v", store.SchemaVersion(), err)
			}
			if n := newest(t, s); n != before {
				t.Fatalf("newest version %d after the upgrade, was %d", n, before)
			}
			create(t, s, cluster("new", "new"))
			if got := strings.Join(changesOf(ctx, t, s, before-1), ", "); got != "ADDED old, ADDED new" {
				t.Errorf("change log across the upgrade = %s, want ADDED old, ADDED new", got)
			}
		})
	}
}
