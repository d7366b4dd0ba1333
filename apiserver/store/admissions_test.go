package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

// The account of rounds in flight: admitted, started by a report at the
// generation admitted (or later), forgotten after a while; a newer
// admission of a resource replaces the older one.
func TestAdmissionsCountRoundsInFlight(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		inFlight := func(since time.Time) int {
			t.Helper()
			n, err := s.InFlight(ctx, since)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		err := s.Admit(ctx, []store.Admission{
			{ResourceID: "a", Generation: 1, At: t0},
			{ResourceID: "b", Generation: 1, At: t0.Add(time.Second)},
			{ResourceID: "c", Generation: 2, At: t0.Add(2 * time.Second)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := inFlight(t0); n != 3 {
			t.Fatalf("in flight = %d, want 3", n)
		}
		if n := inFlight(t0.Add(time.Second)); n != 2 {
			t.Errorf("in flight since the second admission = %d, want 2 (older ones count as lost)", n)
		}

		start := func(id string, generation int64, at time.Time) {
			t.Helper()
			if err := s.InTx(ctx, func(tx store.Tx) error { return tx.StartRound(ctx, id, generation, at) }); err != nil {
				t.Fatal(err)
			}
		}
		start("a", 1, t0.Add(3*time.Second))
		start("c", 1, t0.Add(4*time.Second)) // a report of an older generation starts nothing
		start("zzz", 7, t0.Add(4*time.Second))
		if n := inFlight(t0); n != 2 {
			t.Errorf("in flight after one round started = %d, want 2", n)
		}
		took, newest, err := s.StartedAfter(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(took, []time.Duration{3 * time.Second}) || !newest.Equal(t0.Add(3*time.Second)) {
			t.Errorf("started = %v, newest %v; want one round of 3s started at %v", took, newest, t0.Add(3*time.Second))
		}
		if took, _, _ := s.StartedAfter(ctx, newest); len(took) != 0 {
			t.Errorf("started after the newest = %v, want none", took)
		}

		// A newer hand-off of a started resource counts again.
		if err := s.Admit(ctx, []store.Admission{{ResourceID: "a", Generation: 2, At: t0.Add(5 * time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if n := inFlight(t0); n != 3 {
			t.Errorf("in flight after a second admission of a = %d, want 3", n)
		}

		if err := s.PruneAdmissions(ctx, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if n := inFlight(time.Time{}); n != 0 {
			t.Errorf("in flight after pruning = %d, want 0", n)
		}
	})
}

// Queued finds the resources with a change still in the outbox.
func TestQueuedResources(t *testing.T) {
	eachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		err := s.InTx(ctx, func(tx store.Tx) error {
			for _, id := range []string{"q1", "q2", "q2"} {
				if err := tx.AppendOutbox(ctx, store.OutboxEntry{Kind: "Cluster", ResourceID: id, Generation: 1, Reason: store.OutboxCreated, CreatedTime: time.Now()}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Queued(ctx, []string{"q1", "q2", "q3"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !got["q1"] || !got["q2"] || got["q3"] {
			t.Errorf("queued = %v, want q1 and q2", got)
		}
		if got, err := s.Queued(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("queued of nothing = %v, %v", got, err)
		}
	})
}
