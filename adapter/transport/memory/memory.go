// Package memory is the dry-run transport, a cluster held in memory. The
// objects of the discovery file (keyed by name) exist from the start, as
// the cluster would return them (uid, resourceVersion, status); anything
// else exists once the run creates it. Reads of an object the file lists
// return the file's version, standing for what the server reports.
package memory

import (
	"context"
	"sort"
	"sync"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
)

var _ transport.Transport = (*Transport)(nil)

// Transport is an in-memory cluster.
type Transport struct {
	mu        sync.Mutex
	objects   map[string]transport.Object
	overrides map[string]transport.Object
	deleted   map[string]bool
	// Ops records every write, for the dry-run trace.
	Ops []Op
}

// Op is one recorded write.
type Op struct {
	Verb   string // create, update, delete
	Target string
	Ref    transport.Ref
}

// New returns a cluster holding the discovery overrides.
func New(overrides map[string]transport.Object) *Transport {
	if overrides == nil {
		overrides = map[string]transport.Object{}
	}
	return &Transport{objects: map[string]transport.Object{}, overrides: overrides, deleted: map[string]bool{}}
}

func key(target string, r transport.Ref) string {
	return target + "|" + r.Kind + "|" + r.Namespace + "|" + r.Name
}

// override returns the file's object for ref, if it lists one that has not
// been deleted by this run.
func (t *Transport) override(ref transport.Ref) (transport.Object, bool) {
	if t.deleted[ref.Name] {
		return nil, false
	}
	o, ok := t.overrides[ref.Name]
	if !ok {
		return nil, false
	}
	got := transport.RefOf(o)
	if got.Kind != "" && got.Kind != ref.Kind || got.Namespace != "" && ref.Namespace != "" && got.Namespace != ref.Namespace {
		return nil, false
	}
	return jsonvalue.Copy(o).(transport.Object), true
}

// Get implements transport.Transport.
func (t *Transport) Get(_ context.Context, target string, ref transport.Ref) (transport.Object, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.override(ref); ok {
		return o, nil
	}
	if obj, ok := t.objects[key(target, ref)]; ok {
		return jsonvalue.Copy(obj).(transport.Object), nil
	}
	return nil, nil
}

// Create implements transport.Transport.
func (t *Transport) Create(_ context.Context, target string, obj transport.Object) (transport.Object, error) {
	return t.put("create", target, obj), nil
}

// Update implements transport.Transport.
func (t *Transport) Update(_ context.Context, target string, obj transport.Object) (transport.Object, error) {
	return t.put("update", target, obj), nil
}

func (t *Transport) put(verb, target string, obj transport.Object) transport.Object {
	t.mu.Lock()
	defer t.mu.Unlock()
	ref := transport.RefOf(obj)
	delete(t.deleted, ref.Name)
	t.objects[key(target, ref)] = jsonvalue.Copy(obj).(transport.Object)
	t.Ops = append(t.Ops, Op{Verb: verb, Target: target, Ref: ref})
	if o, ok := t.override(ref); ok {
		return o
	}
	return jsonvalue.Copy(obj).(transport.Object)
}

// Delete implements transport.Transport.
func (t *Transport) Delete(_ context.Context, target string, ref transport.Ref, _ string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.objects, key(target, ref))
	t.deleted[ref.Name] = true
	t.Ops = append(t.Ops, Op{Verb: "delete", Target: target, Ref: ref})
	return nil
}

// List implements transport.Transport.
func (t *Transport) List(_ context.Context, target string, q transport.Query) ([]transport.Object, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	matches := func(o transport.Object) bool {
		ref := transport.RefOf(o)
		if ref.Kind != q.Kind || q.Namespace != "" && q.Namespace != "*" && ref.Namespace != q.Namespace {
			return false
		}
		return transport.Matches(transport.Labels(o), q.Labels)
	}
	seen := map[string]bool{}
	var out []transport.Object
	names := make([]string, 0, len(t.overrides))
	for n := range t.overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		o := t.overrides[n]
		if !t.deleted[n] && matches(o) {
			out = append(out, jsonvalue.Copy(o).(transport.Object))
			seen[n] = true
		}
	}
	keys := make([]string, 0, len(t.objects))
	for k := range t.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		obj := t.objects[k]
		name := transport.RefOf(obj).Name
		if len(k) <= len(target) || k[:len(target)+1] != target+"|" || seen[name] || !matches(obj) {
			continue
		}
		if o, ok := t.override(transport.RefOf(obj)); ok {
			obj = o
		}
		out = append(out, jsonvalue.Copy(obj).(transport.Object))
	}
	return out, nil
}
