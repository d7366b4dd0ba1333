//go:build integration

package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/relay"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

func (w *world) relayWith(required, optional map[string][]string) *relay.Relay {
	return relay.New(relay.Config{Store: w.store, Temporal: w.tc, Registered: required, Optional: optional, Sweep: -1,
		Options: reconcile.Options{StabilityWindow: time.Hour}, Logger: zerolog.Nop()})
}

// The relay hands each workflow both lists: the adapters it waits for and
// the optional ones it runs without waiting.
func TestOptionalAdaptersReachTheWorkflow(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.relay = w.relayWith(registered, map[string][]string{resource.KindCluster: {"audit"}})
	c := w.createCluster("relay-optional")
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	in, sigs := w.started(resource.KindCluster, c.ID)
	if fmt.Sprint(in.Adapters) != "[validation landing-zone]" || fmt.Sprint(in.Optional) != "[audit]" {
		t.Errorf("input = %+v", in)
	}
	if len(sigs) != 1 || fmt.Sprint(sigs[0].Optional) != "[audit]" {
		t.Errorf("signals = %+v", sigs)
	}
}

// A kind whose adapters are all optional still gets its workflows, with an
// empty (not absent) required list.
func TestKindWithOnlyOptionalAdaptersGetsWorkflows(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.relay = w.relayWith(map[string][]string{resource.KindCluster: {}}, map[string][]string{resource.KindCluster: {"audit"}})
	c := w.createCluster("relay-only-optional")
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	in, sigs := w.started(resource.KindCluster, c.ID)
	if in.Adapters == nil || len(in.Adapters) != 0 || fmt.Sprint(in.Optional) != "[audit]" {
		t.Errorf("input = %+v", in)
	}
	if len(sigs) != 1 || sigs[0].Adapters == nil || len(sigs[0].Adapters) != 0 {
		t.Errorf("signals = %+v, want an empty required list, not null", sigs)
	}
}

// Optional lists join the start-up fingerprint only when there are some:
// upgrading a deployment without optional adapters signals no workflow,
// while declaring or dropping one tells every workflow.
func TestOptionalAdaptersAndTheStartupPass(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := w.createCluster("relay-fingerprint")
	if _, err := w.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.relay.Resync(ctx); err != nil { // stores the fingerprint
		t.Fatal(err)
	}
	_, before := w.started(resource.KindCluster, c.ID)

	w.relay = w.relayWith(registered, map[string][]string{resource.KindCluster: {}, resource.KindNodePool: nil})
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, sigs := w.started(resource.KindCluster, c.ID); len(sigs) != len(before) {
		t.Errorf("empty optional lists changed the fingerprint: %d signals, had %d", len(sigs), len(before))
	}

	w.relay = w.relayWith(registered, map[string][]string{resource.KindCluster: {"audit"}})
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	_, sigs := w.started(resource.KindCluster, c.ID)
	if last := sigs[len(sigs)-1]; len(sigs) != len(before)+1 || fmt.Sprint(last.Optional) != "[audit]" {
		t.Fatalf("after declaring an optional adapter, signals = %+v", sigs)
	}

	w.relay = w.relayWith(registered, nil)
	if err := w.relay.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	_, sigs = w.started(resource.KindCluster, c.ID)
	if last := sigs[len(sigs)-1]; len(sigs) != len(before)+2 || last.Optional == nil || len(last.Optional) != 0 {
		t.Errorf("after dropping it, signals = %+v, want an empty optional list (not null) sent", sigs)
	}
}
