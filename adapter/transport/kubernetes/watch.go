package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

// Watch configures a transport to watch what its adapter applies.
type Watch struct {
	// Adapter is the adapter whose objects are watched (the value of the
	// hyperfleet.io/adapter label the engine stamps).
	Adapter string
	// Notify receives every change that may matter to the adapter: a
	// status change, an edit behind the adapter's back, a deletion. It
	// must not block.
	Notify func(transport.Change)
	// Context ends the watches.
	Context context.Context
	Logger  zerolog.Logger
}

// watcher runs one informer per kind the transport has touched, each
// listing only the objects labelled with its adapter, cluster-wide.
type watcher struct {
	cfg Watch
	dyn dynamic.Interface
	mu  sync.Mutex
	on  map[schema.GroupVersionResource]*kindWatch
	// refused is set when a watch was refused: objects of that kind
	// change unnoticed from then on.
	refused atomic.Bool
}

func (w *watcher) healthy() bool { return !w.refused.Load() }

func newWatcher(cfg Watch, dyn dynamic.Interface) *watcher {
	return &watcher{cfg: cfg, dyn: dyn, on: map[schema.GroupVersionResource]*kindWatch{}}
}

// ensure starts watching a kind the first time the transport resolves it,
// and returns once the watch has listed what exists (or ctx ends, or the
// watch was refused). Only changes after that list are reported (an object
// the list finds is no change), so a write made before it could change
// state unnoticed: a Job created and completed while the first list was
// under way would never wake its workflow.
func (w *watcher) ensure(ctx context.Context, gvr schema.GroupVersionResource) {
	if w == nil {
		return
	}
	w.mu.Lock()
	inf, ok := w.on[gvr]
	if !ok {
		inf = w.start(gvr)
		w.on[gvr] = inf
	}
	w.mu.Unlock()
	if inf.synced.Load() {
		return
	}
	wait, cancel := context.WithTimeout(ctx, syncLimit)
	defer cancel()
	if cache.WaitForCacheSync(mergeDone(wait, inf.ctx), inf.informer.HasSynced) {
		inf.synced.Store(true)
	}
}

// syncLimit bounds how long a write waits for its kind's first list: a
// slow list delays the first write of a kind, never blocks it.
const syncLimit = 10 * time.Second

// mergeDone is a channel closed when either context ends.
func mergeDone(a, b context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		select {
		case <-a.Done():
		case <-b.Done():
		}
		close(done)
	}()
	return done
}

// kindWatch is the informer of one kind; ctx ends when the watch is
// stopped or refused.
type kindWatch struct {
	informer cache.SharedIndexInformer
	ctx      context.Context
	synced   atomic.Bool
}

// start runs an informer for the objects of one kind labelled with the
// adapter, cluster-wide.
func (w *watcher) start(gvr schema.GroupVersionResource) *kindWatch {
	ctx, cancel := context.WithCancel(w.cfg.Context)
	selector := labels.SelectorFromSet(labels.Set{transport.LabelAdapter: w.cfg.Adapter}).String()
	inf := dynamicinformer.NewFilteredDynamicInformer(w.dyn, gvr, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	log := w.cfg.Logger.With().Str("adapter", w.cfg.Adapter).Str("watch", gvr.String()).Logger()
	_ = inf.SetTransform(slim)
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			// Without list and watch rights nothing can be noticed: say so
			// once and stop, rather than retrying forever.
			log.Warn().Err(err).Msg("cannot watch the objects this adapter applies: readiness and drift are noticed only at the next round, and its resources keep the short safety-net window (grant list and watch on this resource to the adapter's identity, then restart the worker)")
			w.refused.Store(true)
			cancel()
			return
		}
		log.Debug().Err(err).Msg("watch interrupted; resuming")
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if what := changeOf(old, cur); what != "" {
				w.notify(cur, what, true)
			}
		},
		DeleteFunc: func(obj any) {
			versioned := true
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj, versioned = d.Obj, false
			}
			w.notify(obj, transport.ChangeDeleted, versioned)
		},
	})
	log.Debug().Msg("watching")
	go inf.RunWithContext(ctx)
	return &kindWatch{informer: inf, ctx: ctx}
}

// notify reports a change; versioned says the object is the state the
// event carried (a tombstone's is only this watch's last sight of it,
// which another worker's watch may not share).
func (w *watcher) notify(obj any, what transport.ChangeKind, versioned bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	l := u.GetLabels()
	c := transport.Change{Adapter: l[transport.LabelAdapter], OwnerKind: l[transport.LabelOwnerKind], OwnerID: l[transport.LabelOwnerID],
		Object: transport.RefOf(u.Object), What: what}
	if what != transport.ChangeDeleted {
		c.Digest = u.GetAnnotations()[digestKey]
	}
	if versioned {
		c.Version = u.GetResourceVersion()
	}
	if c.Adapter != w.cfg.Adapter || c.OwnerKind == "" || c.OwnerID == "" {
		return
	}
	w.cfg.Notify(c)
}

// What slim keeps of what it drops, as annotations of the cached copy.
const (
	contentHash   = "hyperfleet.io/content-hash"   // everything but metadata and status
	readinessHash = "hyperfleet.io/readiness-hash" // transport.Readiness of the status
	digestKey     = "hyperfleet.io/digest"         // transport.Digest of the object
)

// slim keeps what changeOf compares (identity, labels, the generation
// annotation) and digests of the content and the readiness, so a cache of
// many objects stays small.
func slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	// client-go may hand an object it already transformed to the
	// transform again; slimmed twice, it would lose its content and status
	// digests and look edited and changed (a running Job woke its workflow
	// this way). What carries the digest annotation is already slim.
	if _, done := u.GetAnnotations()[digestKey]; done {
		return obj, nil
	}
	rest := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			rest[k] = v
		}
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetGeneration(u.GetGeneration())
	out.SetLabels(u.GetLabels())
	out.SetDeletionTimestamp(u.GetDeletionTimestamp())
	out.SetAnnotations(map[string]string{
		taskconfig.GenerationAnnotation: u.GetAnnotations()[taskconfig.GenerationAnnotation],
		contentHash:                     sum(rest),
		readinessHash:                   transport.ReadinessSum(u.Object),
		digestKey:                       transport.Digest(u.Object),
	})
	return out, nil
}

func sum(v any) string {
	raw, _ := json.Marshal(v)
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:8])
}

// changeOf says what an update changed that the adapter may care about:
// the readiness, or the content without a new generation annotation (an
// edit behind its back). Its own applies carry a new generation annotation
// and are not reported; neither is an update that touched neither (a
// label, a finalizer, a replica count).
func changeOf(old, cur any) transport.ChangeKind {
	o, ok1 := old.(*unstructured.Unstructured)
	c, ok2 := cur.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return ""
	}
	oa, ca := o.GetAnnotations(), c.GetAnnotations()
	if oa[readinessHash] != ca[readinessHash] {
		return transport.ChangeStatus
	}
	if oa[contentHash] != ca[contentHash] && oa[taskconfig.GenerationAnnotation] == ca[taskconfig.GenerationAnnotation] {
		return transport.ChangeModified
	}
	return ""
}
