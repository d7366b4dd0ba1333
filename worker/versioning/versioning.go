// Package versioning rolls the reconcile workflow from one release to the
// next with Temporal's worker versioning. Each release of the reconciler is
// a version (its build id) of one worker deployment; reconcile workflows
// are pinned to the version they started on, so a release may change the
// workflow code freely. This package makes a new version current, moves the
// live workflows of the old ones onto it (each continues as new at its next
// safe point, see the reconcile workflow) and tells when an old version is
// drained and its workers may stop.
package versioning

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// DefaultDeployment is the worker deployment reconcilers join unless told
// otherwise.
const DefaultDeployment = "hyperfleet-reconciler"

// Version is one release of the reconciler: a build of a worker deployment.
type Version struct {
	Deployment string
	BuildID    string
}

// String is the version as Temporal's TemporalWorkerDeploymentVersion
// search attribute holds it.
func (v Version) String() string { return v.Deployment + ":" + v.BuildID }

// Versioned reports whether v names a build; an empty build id means an
// unversioned worker.
func (v Version) Versioned() bool { return v.Deployment != "" && v.BuildID != "" }

// Validate says what is wrong with a version given on the command line.
func (v Version) Validate() error {
	if !v.Versioned() {
		return nil
	}
	for _, f := range []struct{ flag, value string }{{"--deployment-name", v.Deployment}, {"--build-id", v.BuildID}} {
		if len(f.value) > 255 {
			return fmt.Errorf("%s is %d characters long; Temporal takes at most 255", f.flag, len(f.value))
		}
		if strings.ContainsAny(f.value, ":\x00") || strings.TrimSpace(f.value) != f.value {
			return fmt.Errorf("%s %q: use no ':', NUL or surrounding spaces (e.g. the image tag, v1.4.2)", f.flag, f.value)
		}
	}
	if v.BuildID == "__unversioned__" {
		return errors.New(`--build-id "__unversioned__" is reserved by Temporal; leave it empty for an unversioned worker`)
	}
	return nil
}

// pinnedQuery lists the open reconcile workflows pinned to v.
func pinnedQuery(v Version) string {
	return fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = '%s'",
		reconcile.WorkflowName, v.String())
}

// Current is the deployment's current version (BuildID empty: none).
func Current(ctx context.Context, c client.Client, deployment string) (Version, error) {
	d, err := c.WorkerDeploymentClient().GetHandle(deployment).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return Version{Deployment: deployment}, nil
	case err != nil:
		return Version{}, fmt.Errorf("describe worker deployment %s: %w", deployment, err)
	}
	cur := Version{Deployment: deployment}
	if v := d.Info.RoutingConfig.CurrentVersion; v != nil {
		cur.BuildID = v.BuildID
	}
	return cur, nil
}

// Exists reports whether Temporal knows v: a worker of it polled once.
func Exists(ctx context.Context, c client.Client, v Version) (bool, error) {
	_, err := c.WorkerDeploymentClient().GetHandle(v.Deployment).DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: v.BuildID})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("describe version %s: %w", v, err)
	}
	return true, nil
}

// Policy says when a reconciler worker makes its own version current.
type Policy string

const (
	// PromoteNew makes the version current when it was never current or
	// ramping: for a rolling update of one Deployment (the Helm chart's
	// rolling mode, run-ha restarting everything), where the new pods
	// must promote themselves before the old ones stop, since an old pod
	// drains its workflows on stop only once another version is current.
	PromoteNew Policy = "new"
	// PromoteFirst makes it current only when the deployment has none: a
	// fresh install starts by itself, and every later release waits for
	// `hyperfleet versions set-current` (or rollout). The default:
	// promoting a release is an operator's step, not a side effect of a
	// pod starting.
	PromoteFirst Policy = "first"
	// PromoteNever only declares the version: workers poll, and
	// set-current (with or without a ramp) decides. The old release's
	// workers must then keep running until set-current has moved their
	// workflows (docs/operator-guide.md, "Upgrading").
	PromoteNever Policy = "never"
)

// ParsePolicy reads --promote: "" is the default, first. "true" and
// "false", what the flag took before it had policies, mean new and never.
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case string(PromoteNew), "true":
		return PromoteNew, nil
	case string(PromoteFirst), "":
		return PromoteFirst, nil
	case string(PromoteNever), "false":
		return PromoteNever, nil
	}
	return "", fmt.Errorf("--promote %q: use first (only a fresh install's first version; the default), new (a version never current before) or never (only `hyperfleet versions set-current`)", s)
}

// Promotion is what Promote did.
type Promotion struct {
	// Promoted is set when v became current now; Previous is the version
	// it replaced (BuildID empty: none, or unversioned workers).
	Promoted bool
	Previous Version
	// Reason says why v was not promoted.
	Reason string
}

// Promote makes v the deployment's current version as policy says: with
// PromoteNew when it was never current or ramping before, with
// PromoteFirst only when no version is current either. A version that was
// current before is never made current again by a worker starting up (an
// old worker restarting during a roll-out would take the fleet back); a
// rollback is an operator's `hyperfleet versions set-current`. Temporal
// registers a version when its first worker polls, so Promote waits for
// that (within ctx).
func Promote(ctx context.Context, c client.Client, v Version, policy Policy) (Promotion, error) {
	if policy == PromoteNever {
		return Promotion{Reason: "this worker only declares its version (--promote never): promote it with `hyperfleet versions set-current " + v.BuildID + "`"}, nil
	}
	info, err := WaitRegistered(ctx, c, v)
	if err != nil {
		return Promotion{}, err
	}
	switch {
	case !info.CurrentSinceTime.IsZero():
		return Promotion{Reason: "already current"}, nil
	case !info.RoutingChangedTime.IsZero():
		return Promotion{Reason: "it was current or ramping before; make it current again with `hyperfleet versions set-current " + v.BuildID + "`"}, nil
	}
	if policy == PromoteFirst {
		cur, err := Current(ctx, c, v.Deployment)
		if err != nil {
			return Promotion{}, err
		}
		if cur.BuildID != "" && cur != v {
			return Promotion{Reason: fmt.Sprintf("%s is current and this worker promotes only a fresh install's version (--promote first): roll out with `hyperfleet versions set-current %s`", cur.BuildID, v.BuildID)}, nil
		}
	}
	prev, err := SetCurrent(ctx, c, v)
	if err != nil {
		// Two workers of a new version start together: the one that
		// lost the race finds its version current, which is what it
		// wanted.
		if cur, cerr := Current(ctx, c, v.Deployment); cerr == nil && cur == v {
			return Promotion{Reason: "already current"}, nil
		}
		return Promotion{}, err
	}
	return Promotion{Promoted: true, Previous: prev}, nil
}

// WaitRegistered waits until Temporal knows v (a worker of it has polled),
// within ctx, and returns what it knows of it.
func WaitRegistered(ctx context.Context, c client.Client, v Version) (client.WorkerDeploymentVersionInfo, error) {
	h := c.WorkerDeploymentClient().GetHandle(v.Deployment)
	for {
		d, err := h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: v.BuildID})
		if err == nil {
			return d.Info, nil
		}
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			return client.WorkerDeploymentVersionInfo{}, fmt.Errorf("describe version %s: %w", v, err)
		}
		select {
		case <-ctx.Done():
			return client.WorkerDeploymentVersionInfo{}, fmt.Errorf("version %s is not registered with Temporal yet (has a worker of it polled?): %w", v, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// SetRamping sends percent (0 < percent < 100) of the new reconcile
// workflows to v, the rest to the current version; workflows already
// running stay where they are. SetCurrent ends the ramp.
func SetRamping(ctx context.Context, c client.Client, v Version, percent float32) error {
	h := c.WorkerDeploymentClient().GetHandle(v.Deployment)
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return fmt.Errorf("describe worker deployment %s: %w", v.Deployment, err)
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur != nil && cur.BuildID == v.BuildID {
		return fmt.Errorf("%s is the current version already; ramp a newer one", v)
	}
	if _, err := h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{
		BuildID: v.BuildID, Percentage: percent, ConflictToken: d.ConflictToken,
	}); err != nil {
		return fmt.Errorf("ramp %s to %g%%: %w", v, percent, err)
	}
	return nil
}

// SetCurrent makes v the deployment's current version and returns the one
// it replaced. New reconcile workflows start on v; workflows pinned to
// other versions move to it at their next safe point once they have a
// task (Nudge gives them one). The replaced version is the one read just
// before: the change carries that reading's conflict token, so a
// concurrent change makes it fail rather than report the wrong one.
func SetCurrent(ctx context.Context, c client.Client, v Version) (Version, error) {
	h := c.WorkerDeploymentClient().GetHandle(v.Deployment)
	prev := Version{Deployment: v.Deployment}
	var token []byte
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		token = d.ConflictToken
		if cur := d.Info.RoutingConfig.CurrentVersion; cur != nil {
			prev.BuildID = cur.BuildID
		}
	case !errors.As(err, &notFound):
		return Version{}, fmt.Errorf("describe worker deployment %s: %w", v.Deployment, err)
	}
	if _, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, ConflictToken: token}); err != nil {
		return Version{}, fmt.Errorf("make %s the current version: %w", v, err)
	}
	return prev, nil
}

// Versions lists the versions Temporal knows of the deployment (none when
// no versioned worker has polled it yet).
func Versions(ctx context.Context, c client.Client, deployment string) ([]Version, error) {
	d, err := c.WorkerDeploymentClient().GetHandle(deployment).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe worker deployment %s: %w", deployment, err)
	}
	out := make([]Version, 0, len(d.Info.VersionSummaries))
	for _, s := range d.Info.VersionSummaries {
		out = append(out, Version{Deployment: deployment, BuildID: s.Version.BuildID})
	}
	return out, nil
}

// ClearRamp ends a ramp, if one is set, and returns the version that was
// ramping (BuildID empty: none, or unversioned workers). A workflow that
// continues as new is routed by the ramp too, so a version still ramping
// never drains: rolling a canary back ends its ramp first.
func ClearRamp(ctx context.Context, c client.Client, deployment string) (Version, error) {
	h := c.WorkerDeploymentClient().GetHandle(deployment)
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return Version{}, fmt.Errorf("describe worker deployment %s: %w", deployment, err)
	}
	rc := d.Info.RoutingConfig
	if rc.RampingVersion == nil && rc.RampingVersionPercentage == 0 {
		return Version{}, nil
	}
	was := Version{Deployment: deployment}
	if rc.RampingVersion != nil {
		was.BuildID = rc.RampingVersion.BuildID
	}
	// An empty build id at 0% is Temporal's "no ramping version".
	if _, err := h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{ConflictToken: d.ConflictToken}); err != nil {
		return Version{}, fmt.Errorf("end the ramp of %s: %w", was, err)
	}
	return was, nil
}

// Pinned counts the open reconcile workflows pinned to v.
func Pinned(ctx context.Context, c client.Client, v Version) (int64, error) {
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: pinnedQuery(v)})
	if err != nil {
		return 0, fmt.Errorf("count workflows pinned to %s: %w", v, err)
	}
	return resp.GetCount(), nil
}

// Nudge sends every open reconcile workflow pinned to v an upgrade notice,
// at most rate a second (0: no limit). A notice runs no adapter: it gives
// the workflow a task, in which a workflow whose version is no longer
// current continues as new onto the current one. It returns how many were
// notified.
func Nudge(ctx context.Context, c client.Client, v Version, rate float64, log zerolog.Logger) (int, error) {
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		tick = t.C
	}
	sent := 0
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: pinnedQuery(v), PageSize: 1000, NextPageToken: token})
		if err != nil {
			return sent, fmt.Errorf("list workflows pinned to %s: %w", v, err)
		}
		for _, e := range page.GetExecutions() {
			if tick != nil {
				select {
				case <-ctx.Done():
					return sent, ctx.Err()
				case <-tick:
				}
			}
			id := e.GetExecution().GetWorkflowId()
			err := c.SignalWorkflow(ctx, id, e.GetExecution().GetRunId(), reconcile.SignalName, reconcile.Signal{Reason: reconcile.ReasonUpgrade})
			var notFound *serviceerror.NotFound
			switch {
			case err == nil:
				sent++
			case errors.As(err, &notFound): // it ended or moved meanwhile
			case ctx.Err() != nil:
				return sent, ctx.Err()
			default:
				log.Warn().Err(err).Str("workflow_id", id).Msg("upgrade notice not sent")
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return sent, nil
		}
	}
}

// Drain moves every workflow pinned to v onto the current version and
// waits until none is left, or ctx ends (then it returns how many remain).
// Only a worker of v can run the move, so v's workers must keep polling
// while it runs: a worker of v that is stopping calls it before it stops
// polling. Visibility lags a moment behind, so a count is trusted only
// after a second quiet look.
func Drain(ctx context.Context, c client.Client, v Version, rate float64, log zerolog.Logger) (int64, error) {
	zeros := 0
	for {
		n, err := Pinned(ctx, c, v)
		if err != nil {
			return -1, err
		}
		if n == 0 {
			if zeros++; zeros == 2 {
				return 0, nil
			}
		} else {
			zeros = 0
			sent, err := Nudge(ctx, c, v, rate, log)
			log.Info().Str("version", v.String()).Int64("pinned", n).Int("notified", sent).Msg("draining: moving pinned workflows to the current version")
			if err != nil {
				if ctx.Err() != nil {
					return n, nil
				}
				return n, err
			}
		}
		select {
		case <-ctx.Done():
			n, err := Pinned(context.WithoutCancel(ctx), c, v)
			return n, err
		case <-time.After(time.Second):
		}
	}
}

// Start is what a reconciler worker of version v does once it polls: make
// v current as policy says, then tell the live workflows of the version it
// replaced to move onto it. It returns once the promotion is decided (the
// worker is then ready: a rolling update may stop the old release's
// workers, which drain first); the notices go on in the background until
// ctx ends.
func Start(ctx context.Context, c client.Client, v Version, policy Policy, rate float64, log zerolog.Logger) {
	log = log.With().Str("version", v.String()).Logger()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	p, err := Promote(pctx, c, v, policy)
	cancel()
	switch {
	case err != nil:
		log.Error().Err(err).Msg("this build was not made current: new reconcile workflows go to the deployment's current version")
		return
	case !p.Promoted:
		log.Info().Str("reason", p.Reason).Msg("this build was not made current")
		return
	}
	log.Info().Str("previous", p.Previous.BuildID).Msg("this build is now the deployment's current version: new reconcile workflows start on it")
	if p.Previous.BuildID == "" {
		return // unversioned workflows take the current version at their next task
	}
	go func() {
		sent, err := Nudge(ctx, c, p.Previous, rate, log)
		if err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Str("previous", p.Previous.String()).Msg("upgrade notices not all sent; the previous build's workers send the rest when they stop")
		}
		log.Info().Str("previous", p.Previous.String()).Int("notified", sent).Msg("live workflows of the previous build told to move at their next safe point")
	}()
}

// Stop is what a reconciler worker of version v does before it stops
// polling: if another version is current, keep serving until v's pinned
// workflows have moved to it (at most timeout), since only v's workers can
// run them. A worker of the current version stops at once: its workflows
// wait for the next worker of v.
func Stop(ctx context.Context, c client.Client, v Version, timeout time.Duration, rate float64, log zerolog.Logger) {
	if timeout <= 0 {
		return
	}
	log = log.With().Str("version", v.String()).Logger()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cur, err := Current(ctx, c, v.Deployment)
	if err != nil {
		log.Warn().Err(err).Msg("stopping without draining: the deployment's current version is unknown")
		return
	}
	if cur.BuildID == "" || cur == v {
		return
	}
	log.Info().Str("current", cur.BuildID).Dur("timeout", timeout).Msg("draining before stopping: moving this build's workflows to the current version")
	left, err := Drain(ctx, c, v, rate, log)
	switch {
	case err != nil:
		log.Error().Err(err).Msg("drain failed: workflows pinned to this build wait for a worker of it")
	case left > 0:
		log.Warn().Int64("pinned", left).Msg("drain timed out: these workflows wait for a worker of this build (start one, or raise --drain-timeout)")
	default:
		log.Info().Msg("drained: no workflow is pinned to this build")
	}
}
