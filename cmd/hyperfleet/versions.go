package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/worker/versioning"
)

// newVersionsCommand shows and steers the reconciler's worker deployment:
// which release new workflows start on, and where the live ones are.
func newVersionsCommand() *cobra.Command {
	var (
		tf         temporalFlags
		deployment string
		rate       float64
	)
	// withClient runs fn with a Temporal client, closed after it.
	var withClient clientRunner = func(fn func(ctx context.Context, c client.Client, log zerolog.Logger) error) func(*cobra.Command, []string) error {
		return withLogger(func(ctx context.Context, log zerolog.Logger) error {
			c, err := temporalclient.Dial(tf.cfg, log.With().Str("component", "temporal").Logger())
			if err != nil {
				return err
			}
			defer c.Close()
			return temporalclient.Explain(fn(ctx, c, log))
		})
	}
	cmd := &cobra.Command{
		Use:   "versions",
		Short: "List the reconciler's releases (worker deployment versions) and where live workflows run",
		Long: `List the versions of the reconciler's Temporal worker deployment: which one
new reconcile workflows start on (current), how many live workflows are still
pinned to each, and whether an old one is drained (its workers may stop).
A reconciler worker makes its version current only on a fresh install
(--promote first, the default; --promote new makes any version never current
before current as its workers start). Roll a later release out, ramp it or
roll it back with the subcommands (rollout does it all, as the Helm chart's
hook).`,
		Args:    cobra.NoArgs,
		PreRunE: bindEnvPreRun,
		RunE: withClient(func(ctx context.Context, c client.Client, _ zerolog.Logger) error {
			return listVersions(ctx, os.Stdout, c, deployment)
		}),
	}
	tf.add(cmd.PersistentFlags(), "127.0.0.1:7233")
	cmd.PersistentFlags().StringVar(&deployment, "deployment-name", versioning.DefaultDeployment, "the reconciler's worker deployment")

	setCurrent := newSetCurrentCommand(&deployment, &rate, withClient)
	drain := newDrainCommand(&deployment, &rate, withClient)
	rollout := newRolloutCommand(&deployment, &rate, withClient)
	for _, c := range []*cobra.Command{setCurrent, drain, rollout} {
		c.Flags().Float64Var(&rate, "upgrade-notice-rate", 200, "upgrade notices a second")
		cmd.AddCommand(c)
	}
	return cmd
}

// clientRunner makes a command's RunE from fn, run with a Temporal client
// that is closed after it.
type clientRunner func(fn func(ctx context.Context, c client.Client, log zerolog.Logger) error) func(*cobra.Command, []string) error

// oneBuildID is the Args check of a subcommand that names one version,
// stored in *buildID.
func oneBuildID(buildID *string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 || args[0] == "" {
			return fmt.Errorf("name one build id (see 'hyperfleet versions')")
		}
		*buildID = args[0]
		return nil
	}
}

// newSetCurrentCommand is `hyperfleet versions set-current`.
func newSetCurrentCommand(deployment *string, rate *float64, withClient clientRunner) *cobra.Command {
	var (
		buildID string
		ramp    float32
		wait    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "set-current BUILD_ID [--ramp PERCENT] [--wait DURATION]",
		Short: "Roll out a version: make it current, or ramp a share of new workflows to it",
		Long: `Make BUILD_ID the version new reconcile workflows start on, and tell the
live workflows of the version it replaces to move to it at their next safe
point. The replaced version's workers must keep running until it is drained
('hyperfleet versions' shows it; they drain on stop by themselves).

This is how a release is rolled out by hand, when its workers do not promote
themselves (--promote first or never): start them beside the old release's,
then set-current; stop the old ones once 'hyperfleet versions' shows them
drained. With --ramp PERCENT (above 0, below 100) BUILD_ID instead takes
that share of the new workflows while the current version keeps the rest
and every live workflow stays where it is; run set-current without --ramp
to finish, or set-current on the old version to roll back. --wait waits
until a worker of BUILD_ID has polled (for a script that runs as the new
workers start).`,
		Args: oneBuildID(&buildID),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnvPreRun(cmd, args); err != nil {
				return err
			}
			if cmd.Flags().Changed("ramp") {
				return checkRamp(ramp)
			}
			return nil
		},
		RunE: withClient(func(ctx context.Context, c client.Client, log zerolog.Logger) error {
			v := versioning.Version{Deployment: *deployment, BuildID: buildID}
			if wait > 0 {
				wctx, cancel := context.WithTimeout(ctx, wait)
				_, err := versioning.WaitRegistered(wctx, c, v)
				cancel()
				if err != nil {
					return err
				}
			}
			if ramp > 0 {
				if err := versioning.SetRamping(ctx, c, v, ramp); err != nil {
					return err
				}
				fmt.Printf("%s takes %g%% of new reconcile workflows; live ones stay where they are\n", v, ramp)
				return nil
			}
			return setCurrentVersion(ctx, c, v, *rate, log)
		}),
	}
	cmd.Flags().Float32Var(&ramp, "ramp", 0, "send only this share (0-100, exclusive) of new workflows to BUILD_ID instead of making it current")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait at most this long for a worker of BUILD_ID to poll (0: it must have polled already)")
	return cmd
}

// newDrainCommand is `hyperfleet versions drain`.
func newDrainCommand(deployment *string, rate *float64, withClient clientRunner) *cobra.Command {
	var (
		buildID string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "drain BUILD_ID",
		Short: "Move every live workflow of a version to the current one and wait until none is left",
		Long: `Tell every live reconcile workflow pinned to BUILD_ID to move to the current
version, and wait until none is left (at most --timeout). A worker of BUILD_ID
must be running: only it can run the move. Use it when that version's workers
stopped before they had drained, after starting one of them again.`,
		Args:    oneBuildID(&buildID),
		PreRunE: bindEnvPreRun,
		RunE: withClient(func(ctx context.Context, c client.Client, log zerolog.Logger) error {
			return drainVersion(ctx, c, versioning.Version{Deployment: *deployment, BuildID: buildID}, timeout, *rate, log)
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	return cmd
}

// checkRamp says what is wrong with a --ramp share.
func checkRamp(ramp float32) error {
	if !(ramp > 0 && ramp < 100) { // NaN too
		return fmt.Errorf("--ramp %g: give a share of new workflows above 0 and below 100; leave --ramp out to make the version current", ramp)
	}
	return nil
}

// setCurrentVersion makes v current and tells the live workflows of the
// version it replaces to move to it, rate notices a second.
func setCurrentVersion(ctx context.Context, c client.Client, v versioning.Version, rate float64, log zerolog.Logger) error {
	if cur, err := versioning.Current(ctx, c, v.Deployment); err == nil && cur == v {
		// Run twice, or after the workers promoted a fresh install's
		// version themselves: nothing to do.
		fmt.Printf("%s is current already\n", v)
		return nil
	}
	prev, err := versioning.SetCurrent(ctx, c, v)
	if err != nil {
		return err
	}
	fmt.Printf("%s is current (was %q)\n", v, prev.BuildID)
	if prev.BuildID == "" || prev == v {
		return nil
	}
	sent, err := versioning.Nudge(ctx, c, prev, rate, log)
	fmt.Printf("told %d workflows pinned to %s to move\n", sent, prev)
	return err
}

// drainVersion moves every live workflow of v, not the current version,
// to the current one, and waits at most timeout until none is left.
func drainVersion(ctx context.Context, c client.Client, v versioning.Version, timeout time.Duration, rate float64, log zerolog.Logger) error {
	// No workflow is pinned to a version Temporal does not know: without
	// this, a typo would be reported drained and its workers free to stop.
	known, err := versioning.Exists(ctx, c, v)
	if err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("%s does not exist: no worker of build id %q has polled deployment %s (`hyperfleet versions` lists its versions)", v, v.BuildID, v.Deployment)
	}
	cur, err := versioning.Current(ctx, c, v.Deployment)
	if err != nil {
		return err
	}
	if cur == v {
		return fmt.Errorf("%s is the current version: make another one current first (hyperfleet versions set-current)", v)
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	left, err := versioning.Drain(dctx, c, v, rate, log)
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d workflows are still pinned to %s after %s: is a worker of it running?", left, v, timeout)
	}
	fmt.Printf("%s is drained: its workers may stop\n", v)
	return nil
}

// listVersions prints one line a version, newest first.
func listVersions(ctx context.Context, out io.Writer, c client.Client, deployment string) error {
	d, err := c.WorkerDeploymentClient().GetHandle(deployment).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return fmt.Errorf("describe worker deployment %s: %w (has a versioned reconciler run yet?)", deployment, err)
	}
	rc := d.Info.RoutingConfig
	sums := d.Info.VersionSummaries
	sort.Slice(sums, func(i, j int) bool { return sums[i].CreateTime.After(sums[j].CreateTime) })
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BUILD ID\tROLE\tPINNED WORKFLOWS\tDRAINAGE\tCREATED")
	for _, s := range sums {
		v := versioning.Version{Deployment: deployment, BuildID: s.Version.BuildID}
		role := "-"
		switch {
		case rc.CurrentVersion != nil && rc.CurrentVersion.BuildID == v.BuildID:
			role = "current"
		case rc.RampingVersion != nil && rc.RampingVersion.BuildID == v.BuildID:
			role = fmt.Sprintf("ramping %.0f%%", rc.RampingVersionPercentage)
		}
		pinned := "?"
		if n, err := versioning.Pinned(ctx, c, v); err == nil {
			pinned = fmt.Sprint(n)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.BuildID, role, pinned, drainage(s.DrainageStatus), s.CreateTime.UTC().Format(time.RFC3339))
	}
	return w.Flush()
}

func drainage(s client.WorkerDeploymentVersionDrainageStatus) string {
	switch s {
	case client.WorkerDeploymentVersionDrainageStatusDraining:
		return "draining"
	case client.WorkerDeploymentVersionDrainageStatusDrained:
		return "drained"
	}
	return "-"
}
