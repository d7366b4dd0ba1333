package store_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// TestTermCountsUnderConcurrentWrites: writers that flip statuses in
// opposite directions in one transaction, move labels, create and remove
// clusters, all at once and beside a compaction that never stops, neither
// fail (no deadlock, no lost update) nor leave a kept count that differs
// from the term rows. Per-term counters updated in place would deadlock
// here on PostgreSQL: two transactions flipping Ready the other way take
// the True and False counters in opposite orders.
func TestTermCountsUnderConcurrentWrites(t *testing.T) {
	eachBackend(t, termCountsUnderConcurrentWrites)
}

func termCountsUnderConcurrentWrites(t *testing.T, s store.Store) {
	ctx := context.Background()
	const clusters, workers, ops = 40, 6, 40
	indexFixture(t, s, clusters)
	id := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

	// flipPair flips Ready on two clusters, one each way when they differ,
	// locking them in id order (the store's rule) but writing them in
	// the order given.
	flipPair := func(a, b int) error {
		return s.InTx(ctx, func(tx store.Tx) error {
			lo, hi := min(a, b), max(a, b)
			locked := map[int]*resource.Resource{}
			for _, i := range []int{lo, hi} {
				r, err := tx.LockResource(ctx, resource.KindCluster, id(i))
				if err != nil {
					return err
				}
				locked[i] = r
			}
			for _, i := range []int{a, b} {
				r := locked[i]
				r.Status.Conditions[0].Status = map[resource.ConditionStatus]resource.ConditionStatus{resource.StatusTrue: resource.StatusFalse, resource.StatusFalse: resource.StatusTrue}[r.Status.Conditions[0].Status]
				if err := tx.UpdateState(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	relabel := func(i, shard int) error {
		return s.InTx(ctx, func(tx store.Tx) error {
			r, err := tx.LockResource(ctx, resource.KindCluster, id(i))
			if err != nil {
				return err
			}
			r.Labels["shard"] = fmt.Sprint(shard)
			return tx.UpdateResource(ctx, r)
		})
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers*ops+1)
	stop := make(chan struct{})
	compactions := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.CompactTermCounts(ctx); err != nil {
				errs <- fmt.Errorf("compact: %w", err)
				return
			}
			compactions++
		}
	}()
	var writers sync.WaitGroup
	for w := range workers {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for op := range ops {
				var err error
				switch k := rng.IntN(10); {
				case k < 6:
					a := rng.IntN(clusters)
					b := (a + 1 + rng.IntN(clusters-1)) % clusters
					err = flipPair(a, b)
				case k < 8:
					err = relabel(rng.IntN(clusters), rng.IntN(5))
				case k < 9:
					c := cluster(id(1000+w*ops+op), fmt.Sprintf("new-%d-%d", w, op))
					c.Labels = map[string]string{"shard": fmt.Sprint(rng.IntN(5))}
					err = s.InTx(ctx, func(tx store.Tx) error { return tx.CreateResource(ctx, c) })
				default:
					// Remove one of this worker's own earlier creations, if any.
					if op > 0 {
						victim := id(1000 + w*ops + rng.IntN(op))
						err = s.InTx(ctx, func(tx store.Tx) error { return tx.RemoveResource(ctx, victim) })
					}
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d, op %d: %w", w, op, err)
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if s.Backend() == store.BackendPostgres && compactions == 0 {
		t.Fatal("no compaction ran beside the writers; the test proves nothing")
	}

	check := func(when string) {
		t.Helper()
		kept, exact, err := store.TermCounts(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(kept, exact) {
			t.Errorf("%s: kept term counts differ from the term rows:\nkept  %v\nexact %v", when, kept, exact)
		}
		for _, q := range []string{"status.conditions.Ready = 'False'", "labels.shard = '2' and status.conditions.Ready = 'True'"} {
			exactIDs, exactTotal := listIDs(t, s, q, false)
			ids, total := listIDs(t, s, q, true)
			if total != exactTotal || !slices.Equal(ids, exactIDs) {
				t.Errorf("%s: %s: indexed total %d (%d ids), exact %d (%d ids)", when, q, total, len(ids), exactTotal, len(exactIDs))
			}
		}
	}
	check("after the writers")
	if _, err := s.CompactTermCounts(ctx); err != nil { // the compactor above may have left nothing
		t.Fatal(err)
	}
	check("after a last compaction")
}
