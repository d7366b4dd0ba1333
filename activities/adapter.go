// Package activities runs the adapter engine as Temporal activities: a
// thin wrapper that runs every phase of one adapter for one event and
// reports what each phase did. Each adapter's activity is registered on
// that adapter's own task queue, so an adapter can run as its own
// deployment with its own credentials.
package activities

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/tracing"
	"github.com/hyperfleet/hyperfleet/phase"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Adapter hosts one adapter's phases.
type Adapter struct {
	Engine *executor.Engine
	Logger zerolog.Logger
}

// Registry is the part of a Temporal worker that registers activities.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register adds the adapter's activity under the name the workflow calls.
func (a *Adapter) Register(r Registry) {
	r.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: reconcile.ActivityRun})
}

// Run runs every phase of the adapter for one event in one activity task:
// params and preconditions, resources (with discovery), then the status
// report. Its result names each phase's outcome and duration, so the
// Temporal UI shows where a run stopped and why; while it runs, its
// heartbeat names the phase under way. A rejected report (4xx) is not
// retried; any other report failure retries the whole run, which is safe
// because every phase is idempotent.
func (a *Adapter) Run(ctx context.Context, in reconcile.RunInput) (reconcile.RunResult, error) {
	// The activity's span (Temporal's interceptor, when tracing is on)
	// names what it ran for; the engine's phase spans are its children.
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(append(tracing.Resource(in.Event.Kind, in.Event.ID, in.Event.Generation),
			tracing.AttrAdapter.String(a.Engine.Name()))...)
	}
	if in.Adapter != "" && in.Adapter != a.Engine.Name() {
		err := fmt.Errorf("a run of adapter %q reached adapter %q", in.Adapter, a.Engine.Name())
		return reconcile.RunResult{}, temporal.NewNonRetryableApplicationError(err.Error(), reconcile.ErrConfig, err)
	}
	if err := checkEvent(in.Event); err != nil {
		return reconcile.RunResult{}, temporal.NewNonRetryableApplicationError(err.Error(), reconcile.ErrConfig, err)
	}
	var (
		run     *executor.Result
		postErr error
		current atomic.Value // the phase under way, for the heartbeat
	)
	heartbeatingWith(ctx, current.Load, func(ctx context.Context) {
		run, postErr = a.Engine.RunEvent(ctx, in.Event, func(p phase.Name) { current.Store(string(p)) })
	})
	st, post := run.State, run.Post
	if postErr != nil {
		if ctx.Err() != nil || (post != nil && post.Retryable) {
			return reconcile.RunResult{}, fmt.Errorf("post: report status of %s: %w", resourceOf(st), postErr)
		}
		return reconcile.RunResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("post: report status of %s: %v", resourceOf(st), postErr), reconcile.ErrRejected, postErr)
	}
	if err := ctx.Err(); err != nil {
		return reconcile.RunResult{}, err // cancelled or timed out: the run is partial
	}
	a.logRetry(ctx, st)
	res := reconcile.RunResult{Adapter: a.Engine.Name(), Generation: in.Event.Generation, Summary: summarize(st, post), Phases: phaseReports(run, postErr)}
	for _, step := range st.Trace.Resources.Steps {
		res.Resources = append(res.Resources, step.Name+"="+string(step.Operation))
	}
	res.Seen = seenObjects(st.Resources)
	// Watched decides the resource's safety-net window; an adapter that
	// applies nothing has nothing of its own to drift.
	res.Unwatched = a.Engine.Unwatched()
	res.Watched = res.Unwatched == ""
	res.RecheckAt = st.RecheckAt
	return res, nil
}

// seenObjects digests each discovered object, keyed as a watch names it, so
// the workflow can tell a change notice it has already acted on.
func seenObjects(resources map[string]any) map[string]string {
	out := map[string]string{}
	for _, v := range resources {
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if ref := transport.RefOf(obj); ref.Name != "" {
			out[ref.String()] = transport.Digest(obj)
		}
	}
	return out
}

// phaseReports names each phase's outcome and duration, in the order the
// engine ran them.
func phaseReports(run *executor.Result, postErr error) []reconcile.PhaseReport {
	tr := &run.State.Trace
	report := func(name phase.Name, outcome phase.Outcome, reason string) reconcile.PhaseReport {
		return reconcile.PhaseReport{Phase: name, Outcome: outcome, Reason: reason, DurationMS: run.Took[name].Milliseconds()}
	}
	postReason := ""
	if postErr != nil {
		postReason = postErr.Error()
	}
	return []reconcile.PhaseReport{
		report(phase.Params, tr.Params.Outcome, tr.Params.Reason),
		report(phase.Preconditions, tr.Preconditions.Outcome, tr.Preconditions.Reason),
		report(phase.Resources, tr.Resources.Outcome, tr.Resources.Reason),
		report(phase.Post, tr.Post.Outcome, postReason),
	}
}

// logRetry notes an attempt after the first, with what it acted on.
func (a *Adapter) logRetry(ctx context.Context, st *executor.State) {
	if info := activity.GetInfo(ctx); info.Attempt > 1 {
		a.Logger.Info().Str("adapter", a.Engine.Name()).Str("kind", st.Event.Kind).Str("resource_id", st.Event.ID).
			Int64("generation", st.Event.Generation).Str("activity", info.ActivityType.Name).
			Int32("attempt", info.Attempt).Msg("activity retried")
	}
}

func summarize(st *executor.State, post *executor.PostResult) reconcile.Summary {
	s := reconcile.Summary{
		ExecutionStatus:  phase.ExecutionStatus(st.Meta.ExecutionStatus),
		ResourcesSkipped: st.Meta.ResourcesSkipped,
		SkipReason:       st.Meta.SkipReason,
		Gone:             st.Gone,
	}
	if e := st.Meta.ExecutionError; e != nil {
		s.ErrorPhase, s.Error = e.Phase, e.Step+": "+e.Message
	}
	if post != nil {
		s.Reported = post.Reported
	}
	return s
}

func checkEvent(ev resource.Event) error {
	if ev.ID == "" || ev.Kind == "" {
		return errors.New("the reconcile event names no resource (id and kind are required)")
	}
	// The event comes from a workflow's input, which anyone who may start
	// a workflow writes: its href is what the adapter's calls are built
	// from, with the worker's credentials, so it must be the API's own
	// path of the resource.
	ref := resource.Ref{Kind: ev.Kind, ID: ev.ID, Path: ev.Href}
	if o := ev.OwnerReferences; o != nil {
		ref.ParentID, ref.ParentKind = o.ID, o.Kind
		owner := resource.Ref{Kind: o.Kind, ID: o.ID, Path: o.Href}
		if err := owner.Validate(); err != nil {
			return fmt.Errorf("the reconcile event's owner: %w", err)
		}
	}
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("the reconcile event: %w", err)
	}
	return nil
}

func resourceOf(st *executor.State) string {
	return st.Event.Kind + " " + st.Event.ID
}

// heartbeatingWith runs fn while telling Temporal the activity is alive, so
// a crashed worker's activity is retried elsewhere after the heartbeat
// timeout instead of the much longer start-to-close timeout. The first beat
// comes after a quarter of the timeout: short runs send none. Each beat
// carries what details returns (the phase under way), shown by the
// Temporal UI on a pending activity.
func heartbeatingWith(ctx context.Context, details func() any, fn func(ctx context.Context)) {
	timeout := activity.GetInfo(ctx).HeartbeatTimeout
	if timeout <= 0 {
		fn(ctx)
		return
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(timeout / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if details != nil {
					activity.RecordHeartbeat(ctx, details())
				} else {
					activity.RecordHeartbeat(ctx)
				}
			}
		}
	}()
	defer close(done)
	fn(ctx)
}
