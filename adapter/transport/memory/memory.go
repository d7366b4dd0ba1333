// Package memory is the dry-run transport: nothing exists before a run,
// applied objects are kept in memory, and reads return the operator's
// discovery overrides (keyed by rendered object name) standing in for what
// the cluster would have added: uid, resourceVersion, status. When the
// engine looks for an object to delete, the overrides are objects that
// exist, so deletion flows can be dry-run too.
package memory

import (
	"context"
	"sort"
	"sync"

	"github.com/hyperfleet/hyperfleet/adapter/jsonvalue"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

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

// New returns an empty cluster with discovery overrides.
func New(overrides map[string]transport.Object) *Transport {
	if overrides == nil {
		overrides = map[string]transport.Object{}
	}
	return &Transport{objects: map[string]transport.Object{}, overrides: overrides, deleted: map[string]bool{}}
}

func key(target string, r transport.Ref) string {
	return target + "|" + r.Kind + "|" + r.Namespace + "|" + r.Name
}

// view is what a read returns: the override for the name, else the object.
func (t *Transport) view(obj transport.Object) transport.Object {
	if o, ok := t.overrides[transport.RefOf(obj).Name]; ok {
		return jsonvalue.Copy(o).(transport.Object)
	}
	return jsonvalue.Copy(obj).(transport.Object)
}

// Get implements transport.Transport.
func (t *Transport) Get(ctx context.Context, target string, ref transport.Ref) (transport.Object, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj, ok := t.objects[key(target, ref)]
	if !ok {
		if o, exists := t.deletable(ctx, ref); exists {
			return o, nil
		}
		return nil, nil
	}
	return t.view(obj), nil
}

// deletable returns the override standing for an existing object, when the
// engine is looking for something to delete and this run has not removed it.
func (t *Transport) deletable(ctx context.Context, ref transport.Ref) (transport.Object, bool) {
	if transport.IntentOf(ctx) != transport.IntentDelete || t.deleted[ref.Name] {
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
	t.objects[key(target, ref)] = jsonvalue.Copy(obj).(transport.Object)
	t.Ops = append(t.Ops, Op{Verb: verb, Target: target, Ref: ref})
	return t.view(obj)
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
func (t *Transport) List(ctx context.Context, target string, q transport.Query) ([]transport.Object, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for k := range t.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []transport.Object
	for _, k := range keys {
		obj := t.objects[k]
		ref := transport.RefOf(obj)
		if k[:len(target)+1] != target+"|" || ref.Kind != q.Kind {
			continue
		}
		if q.Namespace != "" && q.Namespace != "*" && ref.Namespace != q.Namespace {
			continue
		}
		if transport.Matches(transport.Labels(obj), q.Labels) {
			out = append(out, t.view(obj))
		}
	}
	if len(out) == 0 && transport.IntentOf(ctx) == transport.IntentDelete {
		names := make([]string, 0, len(t.overrides))
		for n := range t.overrides {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			o := t.overrides[n]
			ref := transport.RefOf(o)
			if t.deleted[n] || ref.Kind != q.Kind || q.Namespace != "" && q.Namespace != "*" && ref.Namespace != q.Namespace {
				continue
			}
			if transport.Matches(transport.Labels(o), q.Labels) {
				out = append(out, jsonvalue.Copy(o).(transport.Object))
			}
		}
	}
	return out, nil
}
