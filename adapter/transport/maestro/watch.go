package maestro

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openshift-online/maestro/pkg/client/cloudevents/grpcsource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

// sequenceAnnotation is set by the source client on a ManifestWork decoded
// from a status update the agent sent; a ManifestWork read from the REST
// API (the list a watch starts with, and its resyncs) has none.
const sequenceAnnotation = "cloudevents.open-cluster-management.io/sequenceid"

// Watch makes the client report changes to the status of ManifestWorks
// stamped with the adapter's label: an agent reporting that a manifest
// applied, became available, changed a status feedback value, or was
// deleted. notify must not block. The client then keeps a status stream
// open, reconnecting with backoff, from the first Watch until Close.
func (c *Client) Watch(adapter string, notify func(transport.Change)) {
	c.watchMu.Lock()
	c.notify[adapter] = notify
	c.watchMu.Unlock()
	c.watchOnce.Do(func() { go c.watchLoop() })
}

// watched is what the client remembers of a ManifestWork: where its changes
// go and the readiness last seen.
type watched struct {
	adapter, ownerKind, ownerID string
	readiness                   string
	// ref names the ManifestWork as last read whole: what a deletion found
	// by a sweep reports.
	ref transport.Ref
}

// remember records a ManifestWork the transport read or wrote, so a status
// update that carries no labels (an agent need not send the metadata back)
// can still be routed, and a later update is compared with what was read.
func (c *Client) remember(work *workv1.ManifestWork) {
	if work == nil || work.UID == "" {
		return
	}
	l := work.Labels
	if l[transport.LabelAdapter] == "" {
		return
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if _, ok := c.notify[l[transport.LabelAdapter]]; !ok {
		return
	}
	w := routeOf(work)
	w.readiness = c.seen[work.UID].readiness
	c.seen[work.UID] = w
}

// routeOf is where a labelled ManifestWork's changes go. Pure.
func routeOf(work *workv1.ManifestWork) watched {
	l := work.Labels
	return watched{adapter: l[transport.LabelAdapter], ownerKind: l[transport.LabelOwnerKind], ownerID: l[transport.LabelOwnerID],
		ref: transport.Ref{APIVersion: APIVersion, Kind: Kind, Namespace: work.Namespace, Name: work.Name}}
}

// watchLoop keeps one status stream open while the client lives. The
// stream belongs to the connection activities use: it is opened with the
// connection, before anything is published on it (see openLocked), so no
// status report of this connection's writes can arrive before the stream
// listens. When a publish drops the connection, the stream ends with it and
// the next connection opens the next stream.
func (c *Client) watchLoop() {
	backoff := time.Second
	var last *connection
	for c.root.Err() == nil {
		conn, err := c.streamingConnection()
		if err != nil {
			c.log.Debug().Err(err).Dur("retry_in", backoff).Msg("cannot watch ManifestWork status yet: readiness is noticed at the next round until it can")
			select {
			case <-c.root.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		if conn == last {
			// Its stream was read to its end: wait for the connection to go.
			select {
			case <-conn.ctx.Done():
			case <-c.root.Done():
			}
			continue
		}
		if last != nil {
			// A reconnect: what was deleted while no stream was open is
			// not in the relist the new stream starts with.
			go c.sweep(conn.ctx)
		}
		last = conn
		c.consume(conn.ctx.Done(), conn.stream)
	}
}

// sweep reports as deleted each ManifestWork seen before a reconnect that
// Maestro no longer holds. An agent's confirmation of a deletion reaches
// only the streams open at that moment, and a new stream lists only what
// exists, so without this a work deleted while the stream was down (by an
// adapter whose call was under way, or by hand) would be noticed only at
// the owner's next round.
func (c *Client) sweep(ctx context.Context) {
	c.watchMu.Lock()
	before := maps.Clone(c.seen)
	c.watchMu.Unlock()
	if len(before) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 4*c.cfg.Timeout)
	defer cancel()
	list, _, err := grpcsource.PageList(ctx, ocmLogger{c.log}, c.api, fmt.Sprintf("source='%s'", c.cfg.SourceID), metav1.ListOptions{})
	if err != nil {
		c.log.Debug().Err(err).Msg("cannot list ManifestWorks after reconnecting: deletions while away are noticed at the next round")
		return
	}
	held := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		held[types.UID(list.Items[i].GetId())] = true
	}
	for uid, w := range before {
		if held[uid] || w.ref.Name == "" {
			continue
		}
		c.watchMu.Lock()
		notify, still := c.notify[w.adapter], c.seen[uid] == w
		if still {
			delete(c.seen, uid)
			delete(c.cache, uid)
			c.epoch[uid]++
		}
		c.watchMu.Unlock()
		if !still || notify == nil || w.ownerKind == "" || w.ownerID == "" {
			continue // seen again since the snapshot, or not routable
		}
		c.log.Debug().Str("adapter", w.adapter).Str("manifestwork", w.ref.Namespace+"/"+w.ref.Name).
			Msg("ManifestWork deleted while the status stream was down")
		notify(transport.Change{Adapter: w.adapter, OwnerKind: w.ownerKind, OwnerID: w.ownerID, Object: w.ref, What: transport.ChangeDeleted})
	}
}

// streamingConnection returns the current connection with its stream,
// connecting first when there is none, or opening the stream on a
// connection made before the first Watch.
func (c *Client) streamingConnection() (*connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.root.Err() != nil {
		return nil, c.root.Err()
	}
	if c.conn == nil {
		if err := c.openLocked(); err != nil {
			return nil, err
		}
	}
	if c.conn.stream == nil {
		if err := c.conn.openStream(c); err != nil {
			return nil, err
		}
	}
	return c.conn, nil
}

// streamOpen reports whether a status stream is being read.
func (c *Client) streamOpen() bool {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	return c.streaming
}

// watching reports whether any adapter asked for status changes.
func (c *Client) watching() bool {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	return len(c.notify) > 0
}

// openStream watches every consumer's ManifestWorks of this source on the
// connection. The watch starts by listing them over REST: it is allowed
// more than one request's timeout, for a large fleet.
func (conn *connection) openStream(c *Client) error {
	ctx, cancel := context.WithTimeout(klog.NewContext(conn.ctx, c.klog), 4*c.cfg.Timeout)
	defer cancel()
	w, err := conn.works.ManifestWorks(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("watch ManifestWork status: %w", err)
	}
	conn.stream = w
	c.log.Debug().Msg("watching ManifestWork status")
	return nil
}

// consume reads the stream until its connection ends.
func (c *Client) consume(done <-chan struct{}, w watch.Interface) {
	c.watchMu.Lock()
	c.streaming = true
	c.watchMu.Unlock()
	defer func() {
		// Without the stream the cache would go stale: drop it; the next
		// stream lists everything again.
		c.watchMu.Lock()
		c.streaming = false
		clear(c.cache)
		clear(c.epoch)
		c.watchMu.Unlock()
		// The source client sends without a timeout: after Stop, keep
		// reading until it has gone quiet so no sender stays blocked.
		w.Stop()
		for {
			select {
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
			case <-time.After(2 * time.Second):
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		case evt, ok := <-w.ResultChan():
			if !ok {
				return
			}
			c.observe(evt)
		}
	}
}

// observe turns one event into a change notice, when it is one.
func (c *Client) observe(evt watch.Event) {
	work, ok := evt.Object.(*workv1.ManifestWork)
	if !ok {
		return
	}
	obj, err := toObject(work)
	if err != nil {
		return
	}
	readiness := transport.ReadinessSum(obj)
	update := work.Annotations[sequenceAnnotation] != ""

	c.watchMu.Lock()
	c.cacheEventLocked(evt.Type, update, work)
	prev := c.seen[work.UID]
	route := prev
	if work.Labels[transport.LabelAdapter] != "" {
		route = routeOf(work)
	}
	notify := c.notify[route.adapter]
	if notify == nil || route.ownerKind == "" || route.ownerID == "" {
		c.watchMu.Unlock()
		return
	}
	route.readiness = readiness
	what := changeOf(evt.Type, update, prev.readiness, readiness)
	if what == transport.ChangeDeleted {
		delete(c.seen, work.UID)
	} else {
		c.seen[work.UID] = route
	}
	c.watchMu.Unlock()

	c.log.Debug().Str("adapter", route.adapter).Str("manifestwork", work.Namespace+"/"+work.Name).Str("event", string(evt.Type)).
		Bool("status_update", update).Str("change", string(what)).Msg("ManifestWork status event")
	if what == "" {
		return
	}
	ch := transport.Change{Adapter: route.adapter, OwnerKind: route.ownerKind, OwnerID: route.ownerID, Object: refOf(work, obj), What: what}
	if what != transport.ChangeDeleted {
		ch.Digest = transport.Digest(obj)
	}
	if seq := work.Annotations[sequenceAnnotation]; work.ResourceVersion != "" || seq != "" {
		ch.Version = work.ResourceVersion + "/" + seq
	}
	notify(ch)
}

// refOf names the ManifestWork as the engine's discovery does. A status
// update without metadata carries the resource id as its name: the
// namespace and name are then whatever the engine last read.
func refOf(work *workv1.ManifestWork, obj transport.Object) transport.Ref {
	ref := transport.RefOf(obj)
	if ref.Namespace == "" {
		ref.Namespace = work.Namespace
	}
	return ref
}

// changeOf says what an event means for the adapter. Pure.
// before is the readiness last seen, empty when none was.
//   - A deletion the agent confirmed is always a change.
//   - A ManifestWork listed over REST (the watch's start, a resync after a
//     reconnect) is the baseline: no change, unless its readiness differs
//     from what was seen before the stream broke.
//   - A status update is a change when its readiness differs from the last
//     seen, or when none was seen (the first status of a ManifestWork just
//     written: the notice carries its digest, so a workflow that already
//     read this state runs no round).
func changeOf(t watch.EventType, update bool, before, after string) transport.ChangeKind {
	switch {
	case t == watch.Deleted:
		return transport.ChangeDeleted
	case before == "":
		if update {
			return transport.ChangeStatus
		}
		return ""
	case before != after:
		return transport.ChangeStatus
	}
	return ""
}

// watchState is the part of Client the watch uses.
type watchState struct {
	watchMu   sync.Mutex
	watchOnce sync.Once
	notify    map[string]func(transport.Change) // by adapter
	seen      map[types.UID]watched

	// While the stream is open, reads are served from what it delivered,
	// as an informer's cache serves a controller: the REST API is asked
	// only for a ManifestWork the stream has not shown whole.
	streaming bool
	cache     map[types.UID]*workv1.ManifestWork
	// epoch counts what happened to each ManifestWork (events, writes), so
	// a REST read that raced with an event does not overwrite it with an
	// older status.
	epoch     map[types.UID]uint64
	cacheHits atomic.Int64
}

func newWatchState() watchState {
	return watchState{notify: map[string]func(transport.Change){}, seen: map[types.UID]watched{},
		cache: map[types.UID]*workv1.ManifestWork{}, epoch: map[types.UID]uint64{}}
}

// cached returns the stream's copy of a ManifestWork and, on a miss, the
// epoch a REST read must find unchanged to fill the cache.
func (c *Client) cached(uid types.UID) (*workv1.ManifestWork, uint64) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if w := c.cache[uid]; w != nil && c.streaming {
		c.cacheHits.Add(1)
		return w, 0
	}
	return nil, c.epoch[uid]
}

// fill caches what a REST read returned, unless something happened to the
// ManifestWork since the read began.
func (c *Client) fill(uid types.UID, epoch uint64, work *workv1.ManifestWork) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.streaming && work != nil && c.epoch[uid] == epoch && len(c.notify) > 0 {
		c.cache[uid] = work
	}
}

// invalidate forgets the cached copy after a write: the next read asks the
// REST API, which has the write.
func (c *Client) invalidate(uid types.UID) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	c.epoch[uid]++
	delete(c.cache, uid)
}

// cacheEventLocked folds one stream event into the cache.
func (c *Client) cacheEventLocked(t watch.EventType, update bool, work *workv1.ManifestWork) {
	c.epoch[work.UID]++
	switch base := c.cache[work.UID]; {
	case t == watch.Deleted:
		delete(c.cache, work.UID)
		delete(c.epoch, work.UID)
	case !update:
		c.cache[work.UID] = work // listed over REST: whole
	case base != nil:
		// A status report: the agent's status on the spec last read or
		// written (its echo of the spec may be of an older version).
		merged := base.DeepCopy()
		merged.Status = *work.Status.DeepCopy()
		c.cache[work.UID] = merged
	default:
		// A status report of one not held whole: its metadata may be
		// partial, so the next read goes to the REST API.
	}
}
