// Package transport is how the adapter engine reaches the clusters it
// manages. An implementation stores and reads objects (decoded JSON maps);
// the engine decides what to create, update, skip or delete. Kubernetes
// applies directly; Maestro wraps objects in ManifestWorks for a target
// cluster; memory backs dry-run.
package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Labels the engine stamps on every object it applies, so the worker
// hosting the adapter can watch what it manages and tell the owning
// resource's workflow when an object changes.
const (
	// LabelAdapter names the adapter that applied the object.
	LabelAdapter = "hyperfleet.io/adapter"
	// LabelOwnerKind and LabelOwnerID name the HyperFleet resource the
	// object was applied for (a Cluster, a NodePool...).
	LabelOwnerKind = "hyperfleet.io/owner-kind"
	LabelOwnerID   = "hyperfleet.io/owner-id"
)

// ChangeKind is what a Change reports.
type ChangeKind string

// What a Change reports.
const (
	// ChangeStatus: the object's status changed (a Job completed, a
	// Deployment became available).
	ChangeStatus ChangeKind = "status"
	// ChangeModified: the object's content changed without a new
	// generation annotation: someone else edited it.
	ChangeModified ChangeKind = "modified"
	// ChangeDeleted: the object is gone.
	ChangeDeleted ChangeKind = "deleted"
)

// Change is a change to an object an adapter manages, seen by a watch.
type Change struct {
	Adapter   string
	OwnerKind string
	OwnerID   string
	Object    Ref
	What      ChangeKind
	// Digest is the object's Digest after the change; empty when it was
	// deleted.
	Digest string
	// Version names this change of the object as every watcher of it sees
	// it (Kubernetes' resourceVersion; a ManifestWork's resourceVersion and
	// status sequence); empty when the watch cannot tell. Workers that all
	// saw the same change use it to send one signal for it, not one each.
	Version string
}

func (c Change) String() string { return c.Object.String() + " " + string(c.What) }

// Watcher is implemented by a transport that can watch what it applies.
// The engine stamps the adapter and owner labels (Stamp) only on objects
// applied through one that watches: the labels are what its watch selects
// and routes by.
type Watcher interface {
	Watches() bool
}

// WatchHealth is implemented by a Watcher whose watch can stop working
// while the worker runs: a watch refused for lack of list and watch
// rights, a status stream that is down. WatchHealthy reports whether
// every watch it started is working, so a run can say whether its objects'
// changes will really be noticed (RunResult.Watched), and the workflow
// keep the short safety-net window while they would not be.
type WatchHealth interface {
	WatchHealthy() bool
}

// Stamp puts the adapter and owner labels on a manifest about to be
// applied. Values that are not valid label values are left out (the object
// is then applied unwatched rather than refused).
func Stamp(obj Object, adapter, ownerKind, ownerID string) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil || !validLabelValue(adapter) || !validLabelValue(ownerKind) || !validLabelValue(ownerID) {
		return
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[LabelAdapter], labels[LabelOwnerKind], labels[LabelOwnerID] = adapter, ownerKind, ownerID
	meta["labels"] = labels
}

// SameStamp reports whether a live object carries the labels Stamp put on
// the manifest (none, when the manifest has none).
func SameStamp(live, manifest Object) bool {
	l, m := Labels(live), Labels(manifest)
	if m[LabelAdapter] == "" {
		return true // not stamped (applied without a watch): labels are not the point
	}
	for _, k := range []string{LabelAdapter, LabelOwnerKind, LabelOwnerID} {
		if l[k] != m[k] {
			return false
		}
	}
	return true
}

// validLabelValue is Kubernetes' rule for a label value: at most 63
// characters, alphanumerics with '-', '_' or '.' inside.
func validLabelValue(v string) bool {
	if v == "" || len(v) > 63 {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if !alnum(v[0]) || !alnum(v[len(v)-1]) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// Digest sums what a change of an object is judged by: its readiness (see
// Readiness) and its content (everything but metadata and status). A
// watcher and an adapter's run that compute the same digest saw the same
// state, so a change notice that carries the digest the adapter last saw
// needs no new round.
func Digest(obj Object) string {
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "metadata" && k != "status" {
			rest[k] = v
		}
	}
	content, _ := json.Marshal(rest)
	ready, _ := json.Marshal(ObjectReadiness(obj))
	h := sha256.New()
	h.Write(content)
	h.Write([]byte{0})
	h.Write(ready)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// ReadinessSum is a short digest of ObjectReadiness(obj): what a watch
// compares to tell a change of readiness from any other status update.
func ReadinessSum(obj Object) string {
	raw, _ := json.Marshal(ObjectReadiness(obj))
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:8])
}

// ObjectReadiness is Readiness(obj's status), except for a Job: a Job has
// no conditions until it ends, and its status moves while it runs (start
// time, active and ready pods), so by the general rule each of those
// moves would wake the workflow for a round that finds the Job still
// running (one round in six for a cluster of the shipped adapters). A
// Job's readiness is its conditions and its succeeded and failed counts.
func ObjectReadiness(obj Object) any {
	if obj["kind"] != "Job" || !isBatchGroup(obj["apiVersion"]) {
		return Readiness(obj["status"])
	}
	// A Job read before the controller first writes its status may have
	// none: that is the same readiness as an empty status.
	status, isMap := obj["status"].(map[string]any)
	if !isMap && obj["status"] != nil {
		return Readiness(obj["status"])
	}
	conds, _ := status["conditions"].([]any)
	return appendConditions([]string{
		fmt.Sprint("succeeded=", status["succeeded"]),
		fmt.Sprint("failed=", status["failed"]),
	}, conds)
}

// isBatchGroup reports whether apiVersion is in the batch API group
// ("batch/v1", and any later version).
func isBatchGroup(apiVersion any) bool {
	v, _ := apiVersion.(string)
	return strings.HasPrefix(v, "batch/")
}

// Readiness is the part of a status that says how ready an object is: for
// a status with conditions or a phase, the conditions' type, status and
// reason and the phase (for a ManifestWork, also each manifest's conditions
// and status feedback values); otherwise the whole status. Counters and times that
// move while a rollout goes on (active pods, replica counts, update times)
// are left out: each would wake the workflow for a round that finds
// nothing new.
func Readiness(status any) any {
	m, ok := status.(map[string]any)
	if !ok {
		return status
	}
	conds, hasConds := m["conditions"].([]any)
	phase, hasPhase := m["phase"]
	if !hasConds && !hasPhase {
		return status
	}
	out := []string{fmt.Sprint("phase=", phase)}
	out = appendConditions(out, conds)
	// A ManifestWork's own conditions say little (applied, the objects
	// exist); how ready its objects are is in each manifest's conditions
	// and the status feedback values the adapter asked for.
	rs, _ := m["resourceStatus"].(map[string]any)
	manifests, _ := rs["manifests"].([]any)
	for _, e := range manifests {
		entry, _ := e.(map[string]any)
		meta, _ := entry["resourceMeta"].(map[string]any)
		out = append(out, fmt.Sprint("manifest=", meta["kind"], "/", meta["namespace"], "/", meta["name"]))
		mconds, _ := entry["conditions"].([]any)
		out = appendConditions(out, mconds)
		fb, _ := entry["statusFeedback"].(map[string]any)
		values, _ := fb["values"].([]any)
		for _, v := range values {
			if vm, ok := v.(map[string]any); ok {
				raw, _ := json.Marshal(vm["fieldValue"])
				out = append(out, fmt.Sprint("feedback.", vm["name"], "=", string(raw)))
			}
		}
	}
	return out
}

func appendConditions(out []string, conds []any) []string {
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok {
			out = append(out, fmt.Sprint(cm["type"], "=", cm["status"], "/", cm["reason"]))
		}
	}
	return out
}
