// Package kubernetes is the transport that applies objects straight to a
// Kubernetes API server with client-go's dynamic client. Kinds are resolved
// through discovery (a RESTMapper refreshed when a kind is unknown, so CRDs
// installed later are found); updates are server-side applies owned by the
// adapter's field manager.
package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
)

// RESTConfig builds a client configuration: an explicit kubeconfig path,
// else $KUBECONFIG or ~/.kube/config, else the in-cluster service account.
// qps and burst of 0 keep client-go's defaults raised to 50/100 (its 5/10
// throttle a busy worker).
func RESTConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfig != "":
		if _, statErr := os.Stat(kubeconfig); statErr != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, statErr)
		}
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBECONFIG") == "":
		cfg, err = rest.InClusterConfig()
	default:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	if qps > 0 {
		cfg.QPS = qps
	}
	if burst > 0 {
		cfg.Burst = burst
	}
	return cfg, nil
}

// The interfaces the engine uses, checked at compile time.
var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Watcher   = (*Transport)(nil)
)

// Transport talks to one API server.
type Transport struct {
	dyn          dynamic.Interface
	mapper       meta.ResettableRESTMapper
	fieldManager string
	// watch, when set, watches every kind the transport touches.
	watch *watcher
}

// compile-time check: the engine uses a Transport through the interface.
var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Watcher   = (*Transport)(nil)
)

// Option tunes a transport.
type Option func(*Transport)

// WithWatch makes the transport watch the objects its adapter applies, so
// their status changes, edits and deletions are reported as they happen.
func WithWatch(w Watch) Option {
	return func(t *Transport) { t.watch = newWatcher(w, t.dyn) }
}

// New connects with cfg; fieldManager owns the fields the adapter applies.
func New(cfg *rest.Config, fieldManager string, opts ...Option) (*Transport, error) {
	// Calls made within a traced adapter phase get a client span each;
	// watches and discovery, which run without one, pass straight through.
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(tracing.Transport)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery client: %w", err)
	}
	t := &Transport{
		dyn:          dyn,
		mapper:       restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		fieldManager: fieldManager,
	}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// resource resolves a kind to its REST resource, refreshing discovery once
// when the kind is unknown, and has the kind watched (when the transport
// watches) before the caller touches it.
func (t *Transport) resource(ctx context.Context, apiVersion, kind, namespace string) (dynamic.ResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	mapping, err := t.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		t.mapper.Reset()
		mapping, err = t.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, false, fmt.Errorf("%w: the API server serves no %s in %s (is its CRD installed?)", transport.ErrNoSuchKind, kind, apiVersion)
		}
		return nil, false, fmt.Errorf("resolve %s %s: %w", apiVersion, kind, err)
	}
	t.watch.ensure(ctx, mapping.Resource)
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if !namespaced {
		return t.dyn.Resource(mapping.Resource), false, nil
	}
	if namespace == "" || namespace == "*" {
		return t.dyn.Resource(mapping.Resource), true, nil
	}
	return t.dyn.Resource(mapping.Resource).Namespace(namespace), true, nil
}

func (t *Transport) namespaced(ctx context.Context, ref transport.Ref) (dynamic.ResourceInterface, error) {
	ri, namespaced, err := t.resource(ctx, ref.APIVersion, ref.Kind, ref.Namespace)
	if err != nil {
		return nil, err
	}
	if namespaced && ref.Namespace == "" {
		return nil, fmt.Errorf("%s %s is namespaced: set metadata.namespace", ref.Kind, ref.Name)
	}
	return ri, nil
}

// Watches reports whether the transport was built WithWatch.
func (t *Transport) Watches() bool { return t.watch != nil }

// WatchHealthy implements transport.WatchHealth: false once a watch was
// refused (no list or watch rights on a kind the adapter applies).
func (t *Transport) WatchHealthy() bool { return t.watch != nil && t.watch.healthy() }

// Get implements transport.Transport.

func (t *Transport) Get(ctx context.Context, _ string, ref transport.Ref) (transport.Object, error) {
	ri, err := t.namespaced(ctx, ref)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	return u.Object, nil
}

// Create implements transport.Transport.
func (t *Transport) Create(ctx context.Context, _ string, obj transport.Object) (transport.Object, error) {
	ref := transport.RefOf(obj)
	ri, err := t.namespaced(ctx, ref)
	if err != nil {
		return nil, err
	}
	u, err := ri.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: t.fieldManager})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", ref, explain(err))
	}
	return u.Object, nil
}

// Update implements transport.Transport with a forced server-side apply.
func (t *Transport) Update(ctx context.Context, _ string, obj transport.Object) (transport.Object, error) {
	ref := transport.RefOf(obj)
	ri, err := t.namespaced(ctx, ref)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u, err := ri.Patch(ctx, ref.Name, "application/apply-patch+yaml", body, metav1.PatchOptions{FieldManager: t.fieldManager, Force: ptr(true)})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", ref, explain(err))
	}
	return u.Object, nil
}

// Delete implements transport.Transport.
func (t *Transport) Delete(ctx context.Context, _ string, ref transport.Ref, propagationPolicy string) error {
	ri, err := t.namespaced(ctx, ref)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	if propagationPolicy != "" {
		p := metav1.DeletionPropagation(propagationPolicy)
		opts.PropagationPolicy = &p
	}
	if err := ri.Delete(ctx, ref.Name, opts); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", ref, explain(err))
	}
	return nil
}

// List implements transport.Transport.
func (t *Transport) List(ctx context.Context, _ string, q transport.Query) ([]transport.Object, error) {
	ri, _, err := t.resource(ctx, q.APIVersion, q.Kind, q.Namespace)
	if err != nil {
		return nil, err
	}
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(q.Labels).String()})
	if err != nil {
		return nil, fmt.Errorf("list %s with %v: %w", q.Kind, q.Labels, err)
	}
	out := make([]transport.Object, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, list.Items[i].Object)
	}
	return out, nil
}

// explain keeps the API server's own message, which names the invalid
// field, and drops client-go's wrapping.
func explain(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		msg := strings.TrimSpace(s.Message)
		if msg == "" {
			msg = string(s.Reason)
		}
		return fmt.Errorf("%s (HTTP %d %s)", msg, s.Code, s.Reason)
	}
	return err
}

func ptr[T any](v T) *T { return &v }
