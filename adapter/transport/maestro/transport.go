// Package maestro is the transport that places resources on clusters the
// adapter cannot reach directly: each resource is a ManifestWork published
// to a Maestro server for a consumer (transport.maestro.target_cluster),
// whose agent applies the manifests and reports their status back.
//
// Writes go over Maestro's gRPC source API (the work client of
// github.com/openshift-online/maestro/pkg/client/cloudevents/grpcsource);
// reads go to its REST API and return the ManifestWork with its status:
// conditions and, per manifest, status.resourceStatus.manifests[] with the
// values of its feedback rules. The engine's nested discoveries read that.
package maestro

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

// The kind this transport stores.
const (
	APIVersion = "work.open-cluster-management.io/v1"
	Kind       = "ManifestWork"
)

// generationAnnotation is stamped on every manifest inside a ManifestWork
// that lacks it, so the objects on the target cluster say which generation
// they belong to.
const generationAnnotation = "hyperfleet.io/generation"

// Transport implements transport.Transport on a shared Client.
type Transport struct {
	c       *Client
	watches bool
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Watcher   = (*Transport)(nil)
)

// NewTransport wraps a client.
func NewTransport(c *Client) *Transport { return &Transport{c: c} }

// NewWatchingTransport wraps a client that reports status changes of the
// adapter's ManifestWorks to notify (see Client.Watch).
func NewWatchingTransport(c *Client, adapter string, notify func(transport.Change)) *Transport {
	c.Watch(adapter, notify)
	return &Transport{c: c, watches: true}
}

// Watches implements transport.Watcher: the engine stamps the adapter and
// owner labels on ManifestWorks only when their status is watched.
func (t *Transport) Watches() bool { return t.watches }

// WatchHealthy implements transport.WatchHealth: whether the status stream
// is open now. While it is down, agents' reports (and deletions) reach no
// one until it reopens and sweeps.
func (t *Transport) WatchHealthy() bool { return t.watches && t.c.streamOpen() }

// Get implements transport.Transport.
func (t *Transport) Get(ctx context.Context, target string, ref transport.Ref) (transport.Object, error) {
	if err := checkTarget(target, ref.Kind); err != nil {
		return nil, err
	}
	work, err := t.c.read(ctx, target, ref.Name)
	if err != nil {
		return nil, t.c.explain("get", target, "ManifestWork "+ref.Name, err)
	}
	if work == nil {
		return nil, nil
	}
	t.c.remember(work)
	return toObject(work)
}

// Create implements transport.Transport.
func (t *Transport) Create(ctx context.Context, target string, obj transport.Object) (transport.Object, error) {
	work, err := toWork(obj, target)
	if err != nil {
		return nil, err
	}
	var created *workv1.ManifestWork
	err = t.c.works(ctx, target, true, func(ctx context.Context, w workv1client.ManifestWorkInterface) error {
		created, err = w.Create(ctx, work, metav1.CreateOptions{})
		return err
	})
	t.c.invalidate(workID(t.c.cfg.SourceID, target, work.Name))
	if err == nil {
		t.c.remember(created)
	}
	if err != nil {
		return nil, t.c.explain("create", target, "ManifestWork "+work.Name, err)
	}
	return toObject(created)
}

// Update implements transport.Transport. The source client cannot update:
// the change is sent as a JSON merge patch of labels, annotations and spec
// computed against the live ManifestWork.
func (t *Transport) Update(ctx context.Context, target string, obj transport.Object) (transport.Object, error) {
	work, err := toWork(obj, target)
	if err != nil {
		return nil, err
	}
	var patched *workv1.ManifestWork
	err = t.c.works(ctx, target, true, func(ctx context.Context, w workv1client.ManifestWorkInterface) error {
		live, err := w.Get(ctx, work.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		patch, err := mergePatch(live, work)
		if err != nil {
			return err
		}
		patched, err = w.Patch(ctx, work.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	t.c.invalidate(workID(t.c.cfg.SourceID, target, work.Name))
	if err == nil {
		t.c.remember(patched)
	}
	if err != nil {
		return nil, t.c.explain("patch", target, "ManifestWork "+work.Name, err)
	}
	return toObject(patched)
}

// Delete implements transport.Transport. The propagation policy is the
// ManifestWork's own spec.deleteOption, applied by the agent; the
// engine's lifecycle.delete.propagationPolicy does not apply here.
func (t *Transport) Delete(ctx context.Context, target string, ref transport.Ref, _ string) error {
	if err := checkTarget(target, ref.Kind); err != nil {
		return err
	}
	err := t.c.works(ctx, target, true, func(ctx context.Context, w workv1client.ManifestWorkInterface) error {
		return w.Delete(ctx, ref.Name, metav1.DeleteOptions{})
	})
	t.c.invalidate(workID(t.c.cfg.SourceID, target, ref.Name))
	if err != nil && !apierrors.IsNotFound(err) {
		return t.c.explain("delete", target, "ManifestWork "+ref.Name, err)
	}
	return nil
}

// List implements transport.Transport: the consumer's ManifestWorks of this
// source with the labels. The query's namespace does not apply (the
// consumer is the namespace).
func (t *Transport) List(ctx context.Context, target string, q transport.Query) ([]transport.Object, error) {
	if err := checkTarget(target, q.Kind); err != nil {
		return nil, err
	}
	var list *workv1.ManifestWorkList
	err := t.c.works(ctx, target, false, func(ctx context.Context, w workv1client.ManifestWorkInterface) error {
		var err error
		list, err = w.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(q.Labels).String()})
		return err
	})
	if err != nil {
		return nil, t.c.explain("list", target, fmt.Sprintf("ManifestWorks with labels %v", q.Labels), err)
	}
	out := make([]transport.Object, 0, len(list.Items))
	for i := range list.Items {
		obj, err := toObject(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

func checkTarget(target, kind string) error {
	if target == "" {
		return fmt.Errorf("transport.maestro.target_cluster rendered empty: it must name a Maestro consumer")
	}
	if kind != "" && kind != Kind {
		return fmt.Errorf("the maestro transport places ManifestWorks, not %s: wrap the object in a ManifestWork's spec.workload.manifests", kind)
	}
	return nil
}

// toWork converts a rendered manifest into a ManifestWork for a consumer,
// stamping the generation annotation on manifests that lack it. Pure.
func toWork(obj transport.Object, consumer string) (*workv1.ManifestWork, error) {
	ref := transport.RefOf(obj)
	if err := checkTarget(consumer, ref.Kind); err != nil {
		return nil, err
	}
	if ref.APIVersion != APIVersion {
		return nil, fmt.Errorf("ManifestWork %s has apiVersion %q: use %s", ref.Name, ref.APIVersion, APIVersion)
	}
	if ref.Namespace != "" && ref.Namespace != consumer {
		return nil, fmt.Errorf("ManifestWork %s has metadata.namespace %q but target_cluster is %q: remove metadata.namespace (the consumer is the namespace)",
			ref.Name, ref.Namespace, consumer)
	}
	spec, _ := obj["spec"].(map[string]any)
	workload, _ := spec["workload"].(map[string]any)
	manifests, _ := workload["manifests"].([]any)
	if len(manifests) == 0 {
		return nil, fmt.Errorf("ManifestWork %s has no manifests: list the objects to place under spec.workload.manifests", ref.Name)
	}
	gen := transport.Annotation(obj, generationAnnotation)
	stamped := make([]any, len(manifests))
	for i, m := range manifests {
		mo, ok := m.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ManifestWork %s: spec.workload.manifests[%d] is not an object", ref.Name, i)
		}
		r := transport.RefOf(mo)
		if r.APIVersion == "" || r.Kind == "" || r.Name == "" {
			return nil, fmt.Errorf("ManifestWork %s: spec.workload.manifests[%d] needs apiVersion, kind and metadata.name", ref.Name, i)
		}
		stamped[i] = withAnnotation(mo, generationAnnotation, gen)
	}
	copied := shallowWith(obj, "spec", shallowWith(spec, "workload", shallowWith(workload, "manifests", stamped)))
	raw, err := json.Marshal(copied)
	if err != nil {
		return nil, fmt.Errorf("ManifestWork %s: %w", ref.Name, err)
	}
	work := &workv1.ManifestWork{}
	if err := json.Unmarshal(raw, work); err != nil {
		return nil, fmt.Errorf("ManifestWork %s does not match the ManifestWork schema: %w", ref.Name, err)
	}
	work.Namespace = consumer
	return work, nil
}

// withAnnotation returns m with the annotation set when it is missing and
// value is not empty; m itself is never written (it may be shared).
func withAnnotation(m map[string]any, key, value string) map[string]any {
	if value == "" || transport.Annotation(m, key) != "" {
		return m
	}
	meta, _ := m["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return shallowWith(m, "metadata", shallowWith(meta, "annotations", shallowWith(ann, key, value)))
}

// shallowWith copies m (nil is empty) with one key set.
func shallowWith(m map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}

// mergePatch is the JSON merge patch taking the live ManifestWork's labels,
// annotations and spec to the desired ones. Pure.
func mergePatch(live, desired *workv1.ManifestWork) ([]byte, error) {
	view := func(w *workv1.ManifestWork) ([]byte, error) {
		return json.Marshal(map[string]any{
			"metadata": map[string]any{"labels": w.Labels, "annotations": w.Annotations},
			"spec":     w.Spec,
		})
	}
	from, err := view(live)
	if err != nil {
		return nil, err
	}
	to, err := view(desired)
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreateMergePatch(from, to)
}

// toObject turns a ManifestWork into the engine's JSON shape (integers as
// int64), its manifests inline.
func toObject(work *workv1.ManifestWork) (transport.Object, error) {
	raw, err := json.Marshal(work)
	if err != nil {
		return nil, fmt.Errorf("ManifestWork %s: %w", work.Name, err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("ManifestWork %s: %w", work.Name, err)
	}
	obj["apiVersion"], obj["kind"] = APIVersion, Kind
	return obj, nil
}
