package resource

import (
	"fmt"
	"strings"
)

// Ref names one resource: what the API addresses by its path and what a
// reconcile workflow reconciles. One struct for both, so the relay hands
// the API's reference to the workflow unchanged.
type Ref struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// ParentID is the parent of a child kind (the cluster of a node pool),
	// from the path of a nested route.
	ParentID string `json:"parent_id,omitempty"`
	// ParentKind and Path come from the API's kinds table, which workers
	// do not read; empty (as in workflows started before kinds became
	// configuration) means the default kinds: a parent is a Cluster.
	ParentKind string `json:"parent_kind,omitempty"`
	Path       string `json:"path,omitempty"`
}

func (r Ref) String() string {
	if r.ParentID != "" {
		return fmt.Sprintf("%s %s (parent %s)", r.Kind, r.ID, r.ParentID)
	}
	return r.Kind + " " + r.ID
}

// Href is the resource's API path.
func (r Ref) Href() string {
	if r.Path != "" {
		return r.Path
	}
	if r.ParentID != "" {
		return NodePoolHref(r.ParentID, r.ID)
	}
	return ClusterHref(r.ID)
}

// parentHref is the API path of the parent: a child's path is its
// parent's followed by /<plural>/<id>.
func (r Ref) parentHref() string {
	if r.Path != "" {
		p := r.Path
		for range 2 {
			if i := strings.LastIndexByte(p, '/'); i > 0 {
				p = p[:i]
			}
		}
		return p
	}
	return ClusterHref(r.ParentID)
}

// Event is what an adapter receives: the seed's anemic event, so task
// configs written for upstream HyperFleet read the same fields.
func (r Ref) Event(generation int64) Event {
	ev := Event{ID: r.ID, Kind: r.Kind, Href: r.Href(), Generation: generation}
	if r.ParentID != "" {
		kind := r.ParentKind
		if kind == "" {
			kind = KindCluster
		}
		ev.OwnerReferences = &OwnerReference{ID: r.ParentID, Kind: kind, Href: r.parentHref()}
	}
	return ev
}

// RefOf is the Ref of a resource of a kind in the table.
func RefOf(kinds *Kinds, kind, id, parentID string) Ref {
	ref := Ref{Kind: kind, ID: id, ParentID: parentID}
	k, ok := kinds.Get(kind)
	if !ok || kinds.IsDefault(kind) {
		return ref
	}
	if parentID != "" {
		ref.ParentKind = k.ParentKind
	}
	ref.Path = kinds.Href(kind, id, parentID)
	return ref
}
