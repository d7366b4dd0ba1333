// Package transporttest is the conformance suite every transport passes:
// the engine relies on these behaviours whichever transport a resource
// uses, so each implementation's tests run Run against a real target.
package transporttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

// GenerationAnnotation is the annotation the engine compares to skip an
// unchanged apply; every transport must return it as it was written.
const GenerationAnnotation = "hyperfleet.io/generation"

// Suite describes the transport under test.
type Suite struct {
	Transport transport.Transport
	// Target is passed to every call (the Maestro consumer).
	Target string
	// Object builds an object of a kind the transport stores, with the
	// name, labels and generation annotation given.
	Object func(name string, labels map[string]string, generation string) transport.Object
	// Within bounds the wait for asynchronous effects (a deletion the
	// agent confirms); zero means no wait.
	Within time.Duration
}

// Run checks the suite's transport: an absent object reads as nil, the
// generation annotation round-trips through create and update, lists
// filter by labels, and deletion with each propagation policy removes the
// object and is idempotent.
func Run(t *testing.T, s Suite) {
	t.Helper()
	ctx := context.Background()
	id := fmt.Sprintf("conf-%d", time.Now().UnixNano()%1e9)
	refOf := func(name string) transport.Ref { return transport.RefOf(s.Object(name, nil, "1")) }

	t.Run("absent object reads as nil without error", func(t *testing.T) {
		got, err := s.Transport.Get(ctx, s.Target, refOf(id+"-absent"))
		if err != nil || got != nil {
			t.Errorf("Get of an object never created = %v, %v; want nil, nil", got, err)
		}
	})

	t.Run("generation annotation round-trips through create and update", func(t *testing.T) {
		name := id + "-gen"
		created, err := s.Transport.Create(ctx, s.Target, s.Object(name, map[string]string{"conformance": id}, "1"))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if got := transport.Annotation(created, GenerationAnnotation); got != "1" {
			t.Errorf("Create returned generation annotation %q, want \"1\"", got)
		}
		read := s.get(t, name)
		if got := transport.Annotation(read, GenerationAnnotation); got != "1" {
			t.Errorf("Get after Create: generation annotation %q, want \"1\"", got)
		}
		if _, err := s.Transport.Update(ctx, s.Target, s.Object(name, map[string]string{"conformance": id}, "2")); err != nil {
			t.Fatalf("Update: %v", err)
		}
		if got := transport.Annotation(s.get(t, name), GenerationAnnotation); got != "2" {
			t.Errorf("Get after Update: generation annotation %q, want \"2\"", got)
		}
		s.remove(t, name, "Background")
	})

	t.Run("list filters by labels", func(t *testing.T) {
		for _, n := range []string{"a", "b"} {
			if _, err := s.Transport.Create(ctx, s.Target, s.Object(id+"-list-"+n, map[string]string{"conformance": id, "pick": n}, "1")); err != nil {
				t.Fatalf("Create: %v", err)
			}
		}
		q := transport.RefOf(s.Object("x", nil, "1"))
		for _, c := range []struct {
			labels map[string]string
			want   []string
		}{
			{map[string]string{"conformance": id}, []string{id + "-list-a", id + "-list-b"}},
			{map[string]string{"conformance": id, "pick": "a"}, []string{id + "-list-a"}},
			{map[string]string{"conformance": id, "pick": "none"}, nil},
		} {
			items, err := s.Transport.List(ctx, s.Target, transport.Query{APIVersion: q.APIVersion, Kind: q.Kind, Namespace: q.Namespace, Labels: c.labels})
			if err != nil {
				t.Fatalf("List %v: %v", c.labels, err)
			}
			var names []string
			for _, it := range items {
				names = append(names, transport.RefOf(it).Name)
			}
			if fmt.Sprint(sorted(names)) != fmt.Sprint(c.want) {
				t.Errorf("List %v = %v, want %v", c.labels, names, c.want)
			}
		}
		s.remove(t, id+"-list-a", "Background")
		s.remove(t, id+"-list-b", "Background")
	})

	for _, policy := range []string{"Background", "Foreground", "Orphan"} {
		t.Run("delete with propagation "+policy+" removes the object, twice is no error", func(t *testing.T) {
			name := fmt.Sprintf("%s-del-%s", id, strings.ToLower(policy))
			if _, err := s.Transport.Create(ctx, s.Target, s.Object(name, nil, "1")); err != nil {
				t.Fatalf("Create: %v", err)
			}
			s.remove(t, name, policy)
			if err := s.Transport.Delete(ctx, s.Target, refOf(name), policy); err != nil {
				t.Errorf("Delete of an absent object: %v; want no error", err)
			}
		})
	}
}

// ConfigMaps builds the suite's objects as config maps in a namespace, for
// transports that store any Kubernetes kind.
func ConfigMaps(namespace string) func(name string, labels map[string]string, generation string) transport.Object {
	return func(name string, labels map[string]string, generation string) transport.Object {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		return transport.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
			"name": name, "namespace": namespace, "labels": l,
			"annotations": map[string]any{GenerationAnnotation: generation}}, "data": map[string]any{"k": generation}}
	}
}

func (s Suite) get(t *testing.T, name string) transport.Object {
	t.Helper()
	got, err := s.Transport.Get(context.Background(), s.Target, transport.RefOf(s.Object(name, nil, "1")))
	if err != nil || got == nil {
		t.Fatalf("Get %s = %v, %v; want the object", name, got, err)
	}
	return got
}

// remove deletes and waits until the object reads as absent.
func (s Suite) remove(t *testing.T, name, policy string) {
	t.Helper()
	ctx := context.Background()
	ref := transport.RefOf(s.Object(name, nil, "1"))
	if err := s.Transport.Delete(ctx, s.Target, ref, policy); err != nil {
		t.Fatalf("Delete %s (%s): %v", name, policy, err)
	}
	// Deleted again every few seconds while it is there, as the engine does
	// on each run: a real Maestro agent can lose a delete (see the Maestro
	// transport's tests), and the next one heals it.
	deadline := time.Now().Add(s.Within)
	again := time.Now().Add(5 * time.Second)
	for {
		got, err := s.Transport.Get(ctx, s.Target, ref)
		if err == nil && got == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still readable after Delete (%s), repeated every 5s, and %s: %v, %v", name, policy, s.Within, got, err)
		}
		if time.Now().After(again) {
			if err := s.Transport.Delete(ctx, s.Target, ref, policy); err != nil {
				t.Fatalf("Delete %s (%s) again: %v", name, policy, err)
			}
			again = time.Now().Add(5 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}
