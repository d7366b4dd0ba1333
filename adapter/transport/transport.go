// Package transport is how the adapter engine reaches the clusters it
// manages. An implementation stores and reads objects (decoded JSON maps);
// the engine decides what to create, update, skip or delete. Kubernetes
// applies directly; Maestro wraps objects in ManifestWorks for a target
// cluster; memory backs dry-run.
package transport

import (
	"context"
	"errors"
	"fmt"
)

// Object is a Kubernetes-style object as decoded JSON.
type Object = map[string]any

// Ref identifies an object.
type Ref struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

func (r Ref) String() string {
	if r.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	return fmt.Sprintf("%s %s", r.Kind, r.Name)
}

// Query selects objects by labels. An empty or "*" namespace means every
// namespace (or a cluster-scoped kind).
type Query struct {
	APIVersion string
	Kind       string
	Namespace  string
	Labels     map[string]string
}

// Transport stores and reads objects on a target. Target names the cluster
// (the Maestro consumer); Kubernetes ignores it.
type Transport interface {
	// Get returns the object, or nil when it does not exist.
	Get(ctx context.Context, target string, ref Ref) (Object, error)
	Create(ctx context.Context, target string, obj Object) (Object, error)
	// Update applies the object over the live one (server-side apply).
	Update(ctx context.Context, target string, obj Object) (Object, error)
	// Delete removes the object; absent objects are not an error.
	Delete(ctx context.Context, target string, ref Ref, propagationPolicy string) error
	List(ctx context.Context, target string, q Query) ([]Object, error)
}

// ErrNoSuchKind means the target does not serve the object's kind (a
// missing CRD); retrying does not help until it is installed.
var ErrNoSuchKind = errors.New("no such kind")

// RefOf reads an object's identity.
func RefOf(obj Object) Ref {
	meta, _ := obj["metadata"].(map[string]any)
	s := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	return Ref{APIVersion: s(obj, "apiVersion"), Kind: s(obj, "kind"), Namespace: s(meta, "namespace"), Name: s(meta, "name")}
}

// Annotation reads one annotation.
func Annotation(obj Object, key string) string {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	v, _ := ann[key].(string)
	return v
}

// Labels reads an object's labels.
func Labels(obj Object) map[string]string {
	meta, _ := obj["metadata"].(map[string]any)
	raw, _ := meta["labels"].(map[string]any)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Matches reports whether labels hold every selector pair.
func Matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
