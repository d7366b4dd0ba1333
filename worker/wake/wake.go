// Package wake tells reconcile workflows that objects their adapters manage
// changed: a Job completed, a Deployment became available, someone edited
// or deleted an object behind the adapter's back. The adapter's transport
// watches the objects and reports each change here; the waker turns them
// into signals to the owning resource's workflow, at most one per workflow
// per interval (the first once the changes have been quiet for a few
// milliseconds, the rest folded into one at the end of the interval), so a
// burst of status updates costs one round.
package wake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Signaller is the part of a Temporal client a Waker uses.
type Signaller interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// DefaultInterval is the least time between two signals to one workflow.
const DefaultInterval = 250 * time.Millisecond

// DefaultSettle is how long a change waits for quiet before it is
// signalled: changes that follow within it fold into the same signal.
const DefaultSettle = 30 * time.Millisecond

// maxObjects bounds the object states one signal lists per workflow.
const maxObjects = 64

// Waker folds changes into signals.
type Waker struct {
	interval time.Duration
	settle   time.Duration
	client   atomic.Pointer[Signaller]
	log      zerolog.Logger
	signals  *prometheus.CounterVec

	mu      sync.Mutex
	pending map[string]*entry // by workflow id
	sem     chan struct{}
}

type entry struct {
	last    time.Time
	first   time.Time // of the changes pending
	timer   *time.Timer
	objects map[string]pendingObject // latest state, by adapter and object
	details []string
}

// pendingObject is an object's latest state and the change that made it
// (transport.Change.Version).
type pendingObject struct {
	reconcile.ObjectChange
	version string
}

// New builds a waker; Attach gives it the client to signal with (changes
// reported before that are dropped: nothing has been applied yet).
func New(interval time.Duration, reg prometheus.Registerer, log zerolog.Logger) *Waker {
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &Waker{interval: interval, settle: min(DefaultSettle, interval), log: log, pending: map[string]*entry{}, sem: make(chan struct{}, 16),
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperfleet_worker_wake_signals_total",
			Help: "Signals sent to reconcile workflows because an object an adapter manages changed, by outcome (sent, gone: no workflow runs, error).",
		}, []string{"outcome"})}
	if reg != nil {
		w.Register(reg)
	}
	return w
}

// Register adds the waker's metrics to reg, for a waker made with a nil
// registerer before the registry existed.
func (w *Waker) Register(reg prometheus.Registerer) { reg.MustRegister(w.signals) }

// Attach sets the client.
func (w *Waker) Attach(c Signaller) { w.client.Store(&c) }

// Notify records a change; it never blocks.
func (w *Waker) Notify(c transport.Change) {
	id := reconcile.WorkflowID(c.OwnerKind, c.OwnerID)
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.pending[id]
	if e == nil {
		if len(w.pending) > 10000 {
			w.forget()
		}
		e = &entry{objects: map[string]pendingObject{}}
		w.pending[id] = e
	}
	key := c.Adapter + "\x00" + c.Object.String()
	if len(e.objects) < maxObjects || e.objects[key].Adapter != "" {
		e.objects[key] = pendingObject{reconcile.ObjectChange{Adapter: c.Adapter, Object: c.Object.String(), Digest: c.Digest}, c.Version}
	} else {
		// Too many to list: a deletion-like entry makes the adapter run.
		e.objects[c.Adapter+"\x00*"] = pendingObject{ObjectChange: reconcile.ObjectChange{Adapter: c.Adapter, Object: "*"}}
	}
	if len(e.details) < 5 {
		e.details = append(e.details, c.String())
	}
	now := time.Now()
	switch {
	case e.timer == nil:
		e.first = now
		delay := max(w.settle, e.last.Add(w.interval).Sub(now))
		e.timer = time.AfterFunc(delay, func() { w.flush(id) })
	case !now.Before(e.last.Add(w.interval)) && now.Sub(e.first)+w.settle <= w.interval && e.timer.Stop():
		// Still settling: reports of one change often come in pairs a few
		// milliseconds apart (a ManifestWork applied, then its feedback):
		// wait for quiet once more, within the interval, so they cost one
		// round, not two.
		e.timer = time.AfterFunc(w.settle, func() { w.flush(id) })
	}
}

// forget drops entries with nothing pending whose interval has passed.
func (w *Waker) forget() {
	cutoff := time.Now().Add(-w.interval)
	for id, e := range w.pending {
		if e.timer == nil && e.last.Before(cutoff) {
			delete(w.pending, id)
		}
	}
}

func (w *Waker) flush(id string) {
	w.mu.Lock()
	e := w.pending[id]
	if e == nil || len(e.objects) == 0 {
		if e != nil {
			e.timer = nil
		}
		w.mu.Unlock()
		return
	}
	var changed []string
	pending := make([]pendingObject, 0, len(e.objects))
	for _, o := range e.objects {
		pending = append(pending, o)
		if !slices.Contains(changed, o.Adapter) {
			changed = append(changed, o.Adapter)
		}
	}
	slices.Sort(changed)
	slices.SortFunc(pending, func(a, b pendingObject) int {
		return strings.Compare(a.Adapter+"\x00"+a.Object, b.Adapter+"\x00"+b.Object)
	})
	objects := make([]reconcile.ObjectChange, len(pending))
	for i, o := range pending {
		objects[i] = o.ObjectChange
	}
	detail := strings.Join(e.details, "; ")
	requestID := signalRequestID(id, pending)
	e.objects, e.details, e.timer, e.last = map[string]pendingObject{}, nil, nil, time.Now()
	w.mu.Unlock()

	cp := w.client.Load()
	if cp == nil {
		return
	}
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if requestID != "" {
		ctx = temporalclient.WithSignalRequestID(ctx, requestID)
	}
	err := (*cp).SignalWorkflow(ctx, id, "", reconcile.SignalName,
		reconcile.Signal{Reason: reconcile.ReasonObjectChanged, Changed: changed, Objects: objects, Detail: detail})
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		w.signals.WithLabelValues("sent").Inc()
		w.log.Debug().Str("workflow_id", id).Strs("adapters", changed).Str("detail", detail).Msg("woke the workflow: managed objects changed")
	case errors.As(err, &notFound):
		// The resource's workflow has finished: nothing to tell.
		w.signals.WithLabelValues("gone").Inc()
	default:
		// The workflow's own timers are the safety net.
		w.signals.WithLabelValues("error").Inc()
		w.log.Warn().Err(err).Str("workflow_id", id).Str("detail", detail).Msg("could not wake the workflow; it will look again at its next timer")
	}
}

// signalRequestID names a signal by what it reports: the workflow and, for
// each object, its state and the change that made it. Every worker watches
// the objects, so each sees the same change and signals it; Temporal
// records a signal whose request id it has already recorded in the run
// only once, so the copies cost no history events and wake no workflow
// task. Two signals get the same id only when they report the very same
// changes: a later change of an object has another version, even back to
// an earlier state. Without a version for every object the id is empty and
// the signal gets a random one, as before.
func signalRequestID(workflowID string, objects []pendingObject) string {
	h := sha256.New()
	h.Write([]byte(workflowID))
	for _, o := range objects { // sorted by the caller
		if o.version == "" {
			return ""
		}
		for _, part := range []string{o.Adapter, o.Object, o.Digest, o.version} {
			h.Write([]byte{0})
			h.Write([]byte(part))
		}
	}
	return "wake-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// compile-time check: a Temporal client can signal.
var _ Signaller = client.Client(nil)
