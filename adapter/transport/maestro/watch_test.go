//go:build integration

package maestro

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/await"
)

// changes collects what a watch reports.
type changes struct {
	mu  sync.Mutex
	got []transport.Change
}

func (c *changes) notify(ch transport.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, ch)
}

func (c *changes) of(object string) []transport.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []transport.Change
	for _, ch := range c.got {
		if ch.Object.Name == object {
			out = append(out, ch)
		}
	}
	return out
}

// The agent's status reports reach the adapter as change notices routed by
// the labels the engine stamps: the first status, a status feedback value
// that changed with a new generation, and the deletion. Another adapter's
// ManifestWorks are not reported to this one.
func TestWatchReportsStatusChangesThroughRealMaestro(t *testing.T) {
	e := realMaestro(t)
	// The client's debug log, shown when the test fails (its goroutines may
	// still log after the test ends, which t.Log forbids).
	var logs lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client log:\n%s", logs.String())
		}
	})
	c, err := New(Config{GRPCAddress: e.m.GRPCAddr, HTTPAddress: e.m.HTTPURL, SourceID: "transport-watch", Insecure: true}, zerolog.New(&logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var seen changes
	tr := NewWatchingTransport(c, "watcher", seen.notify)
	if !tr.Watches() {
		t.Fatal("a watching transport says it does not watch")
	}
	ctx := context.Background()
	name := fmt.Sprintf("tr-watch-%d", time.Now().UnixNano()%1e6)
	ref := transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: name}
	mine := configMapWork(name, "1", "one")
	transport.Stamp(mine, "watcher", "Cluster", "c-"+name)
	other := configMapWork(name+"-other", "1", "x")
	transport.Stamp(other, "someone-else", "Cluster", "c-other")

	if _, err := tr.Create(ctx, "spoke1", mine); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Create(ctx, "spoke1", other); err != nil {
		t.Fatal(err)
	}

	// The first status report (applied, feedback read) is a change, and its
	// digest is the one a read of the same state computes.
	await.Eventually(t, 30*time.Second, "a status change for the applied work", func() (bool, string) {
		live, err := tr.Get(ctx, "spoke1", ref)
		if err != nil || live == nil || feedback(live, "ConfigMap", "value") != "one" {
			return false, fmt.Sprint("not applied yet: ", err)
		}
		got := seen.of(name)
		for _, ch := range got {
			if ch.What == transport.ChangeStatus && ch.Digest == transport.Digest(live) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("changes %v, digest of a read %s", got, transport.Digest(live))
	})
	first := seen.of(name)[0]
	if first.Adapter != "watcher" || first.OwnerKind != "Cluster" || first.OwnerID != "c-"+name ||
		first.Object != (transport.Ref{APIVersion: APIVersion, Kind: Kind, Namespace: "spoke1", Name: name}) {
		t.Errorf("change routed as %+v", first)
	}
	if first.Version == "" {
		t.Errorf("change %+v carries no version: the workers that all saw it could not send it as one signal", first)
	}

	// A new generation: the agent applies it and the changed status
	// feedback value is reported, with the digest of the new state.
	two := configMapWork(name, "2", "two")
	transport.Stamp(two, "watcher", "Cluster", "c-"+name)
	if _, err := tr.Update(ctx, "spoke1", two); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 60*time.Second, "a status change for the new feedback value", func() (bool, string) {
		live, err := tr.Get(ctx, "spoke1", ref)
		if err != nil || live == nil || feedback(live, "ConfigMap", "value") != "two" {
			return false, fmt.Sprint("not applied yet: ", err)
		}
		return slices.ContainsFunc(seen.of(name), func(ch transport.Change) bool { return ch.Digest == transport.Digest(live) }),
			fmt.Sprintf("changes %v, digest of a read %s", seen.of(name), transport.Digest(live))
	})

	// While the stream is open, reads are served from it: the status
	// polled above came from the agent's reports, not from REST.
	if c.cacheHits.Load() == 0 {
		t.Error("no read was served from the status stream")
	}
	// A write empties its work's entry, and a REST read refills it only if
	// no stream event raced the read (the agent reports several times
	// after an apply), so the entry may take a few reads to come back.
	await.Eventually(t, 30*time.Second, "the work cached under Maestro's id", func() (bool, string) {
		if _, err := tr.Get(ctx, "spoke1", ref); err != nil {
			return false, err.Error()
		}
		c.watchMu.Lock()
		defer c.watchMu.Unlock()
		_, ok := c.cache[workID("transport-watch", "spoke1", name)]
		return ok, fmt.Sprintf("the cache holds no ManifestWork under Maestro's id for spoke1/%s", name)
	})

	if err := tr.Delete(ctx, "spoke1", ref, "Background"); err != nil {
		t.Fatal(err)
	}
	deleteAgain := redelete(t, tr, "spoke1", ref)
	await.Eventually(t, 60*time.Second, "the deletion reported", func() (bool, string) {
		got := seen.of(name)
		if slices.ContainsFunc(got, func(ch transport.Change) bool { return ch.What == transport.ChangeDeleted && ch.Digest == "" }) {
			return true, ""
		}
		deleteAgain()
		// Tell a deletion the agent has not confirmed yet from one the
		// watch missed: ask Maestro's REST API, not the cache.
		return false, fmt.Sprintf("changes %v; Maestro still holds the work: %s", got, restHolds(ctx, c, "spoke1", name))
	})
	if got, err := tr.Get(ctx, "spoke1", ref); err != nil || got != nil {
		t.Errorf("read after the agent confirmed the deletion = %v, %v; want nil", got, err)
	}
	if got := seen.of(name + "-other"); len(got) != 0 {
		t.Errorf("another adapter's ManifestWork was reported to this one: %v", got)
	}
}

// configMapWork is a ManifestWork placing one config map in the default
// namespace, with a feedback rule reading its data. Its deletion is
// confirmed as soon as the agent deletes the map: no namespace controller
// has to finish first, as it would for work()'s namespace.
func configMapWork(name, gen, value string) transport.Object {
	return transport.Object{
		"apiVersion": APIVersion, "kind": Kind,
		"metadata": map[string]any{
			"name":        name,
			"labels":      map[string]any{"test": "transport-watch"},
			"annotations": map[string]any{"hyperfleet.io/generation": gen},
		},
		"spec": map[string]any{
			"workload": map[string]any{"manifests": []any{
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": "default"},
					"data":     map[string]any{"value": value}},
			}},
			"manifestConfigs": []any{map[string]any{
				"resourceIdentifier": map[string]any{"group": "", "resource": "configmaps", "name": name, "namespace": "default"},
				"feedbackRules":      []any{map[string]any{"type": "JSONPaths", "jsonPaths": []any{map[string]any{"name": "value", "path": ".data.value"}}}},
			}},
		},
	}
}

// restHolds says whether Maestro's REST API still has the ManifestWork, and
// whether it is being deleted.
func restHolds(ctx context.Context, c *Client, consumer, name string) string {
	got, err := c.readREST(ctx, workID(c.cfg.SourceID, consumer, name))
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case got == nil:
		return "no (the watch missed the deletion)"
	}
	return fmt.Sprintf("yes, deletion requested at %v, conditions %v (the agent has not confirmed it)", got.DeletionTimestamp, got.Status.Conditions)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A deletion the agent confirms while the status stream is down reaches
// no stream, and the stream opened on reconnecting lists only the works
// that exist: the client sweeps after a reconnect and reports the works it
// had seen that are gone.
func TestWatchReportsDeletionsMissedWhileDisconnected(t *testing.T) {
	e := realMaestro(t)
	var logs lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client log:\n%s", logs.String())
		}
	})
	source := fmt.Sprintf("transport-sweep-%d", time.Now().UnixNano()%1e6)
	cfg := Config{GRPCAddress: e.m.GRPCAddr, HTTPAddress: e.m.HTTPURL, SourceID: source, Insecure: true}
	c, err := New(cfg, zerolog.New(&logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var seen changes
	tr := NewWatchingTransport(c, "watcher", seen.notify)
	ctx := context.Background()
	name := "sweep-" + source
	ref := transport.Ref{APIVersion: APIVersion, Kind: Kind, Name: name}
	mine := configMapWork(name, "1", "one")
	transport.Stamp(mine, "watcher", "Cluster", "c-"+name)
	if _, err := tr.Create(ctx, "spoke1", mine); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "the first status change", func() (bool, string) {
		got := seen.of(name)
		return len(got) > 0, fmt.Sprint(got)
	})

	// Drop the connection and keep the client from reconnecting (it
	// reconnects under c.mu) while another client of the same source
	// deletes the work and the agent confirms it.
	c.mu.Lock()
	c.dropLocked()
	released := false
	release := func() {
		if !released {
			released = true
			c.mu.Unlock()
		}
	}
	t.Cleanup(release)
	other, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	if err := NewTransport(other).Delete(ctx, "spoke1", ref, "Background"); err != nil {
		t.Fatal(err)
	}
	// The agent can drop a delete that lands while it writes the work's
	// status; deleting again through the other client heals that, as the
	// engine's next run would.
	deleteAgain := redelete(t, NewTransport(other), "spoke1", ref)
	await.Eventually(t, 60*time.Second, "Maestro to forget the work", func() (bool, string) {
		got, err := other.readREST(ctx, workID(source, "spoke1", name))
		if err == nil && got == nil {
			return true, ""
		}
		deleteAgain()
		return false, fmt.Sprint("still held: ", got != nil, " ", err)
	})
	deleted := func() bool {
		return slices.ContainsFunc(seen.of(name), func(ch transport.Change) bool { return ch.What == transport.ChangeDeleted })
	}
	if deleted() {
		t.Fatal("a deletion was reported while the client had no connection: the test does not test the sweep")
	}

	release()
	await.Eventually(t, 30*time.Second, "the deletion reported after reconnecting", func() (bool, string) {
		return deleted(), fmt.Sprint(seen.of(name))
	})
	for _, ch := range seen.of(name) {
		if ch.What == transport.ChangeDeleted &&
			(ch.Adapter != "watcher" || ch.OwnerKind != "Cluster" || ch.OwnerID != "c-"+name || ch.Object.Name != name || ch.Object.Namespace != "spoke1") {
			t.Errorf("deletion routed as %+v", ch)
		}
	}
}
