package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	kubetransport "github.com/hyperfleet/hyperfleet/adapter/transport/kubernetes"
	"github.com/hyperfleet/hyperfleet/worker/versioning"
)

// buildIDAnnotation names, on a reconciler Deployment, the build id its
// workers run. An annotation, since a build id need not be a valid label
// value (v1.4.2+meta, 255 characters).
const buildIDAnnotation = "hyperfleet.io/build-id"

// serviceAccountNamespaceFile is where a pod's namespace is when no
// --kube-namespace (the chart's downward API variable) names it.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// rolloutOptions are the flags of `hyperfleet versions rollout`.
type rolloutOptions struct {
	ramp       float32
	rampSet    bool // --ramp given: 0 is then a mistake, not "no ramp"
	rampFor    time.Duration
	timeout    time.Duration
	selector   string
	namespace  string
	kubeconfig string
}

// validate says what is wrong with the flags before anything is changed.
func (o rolloutOptions) validate() error {
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout %s: give the roll-out some time, e.g. 15m", o.timeout)
	}
	if o.rampSet {
		if err := checkRamp(o.ramp); err != nil {
			return err
		}
	}
	if o.rampFor < 0 {
		return fmt.Errorf("--ramp-for %s: give a duration of 0 (hold at the ramp) or more", o.rampFor)
	}
	if o.rampFor > 0 && !o.rampSet {
		return errors.New("--ramp-for needs --ramp: the share of new workflows to send to the version meanwhile")
	}
	if o.rampFor >= o.timeout {
		return fmt.Errorf("--ramp-for %s is not shorter than --timeout %s: raise --timeout to leave time to drain the old versions", o.rampFor, o.timeout)
	}
	if o.selector != "" {
		sel, err := labels.Parse(o.selector)
		if err != nil {
			return fmt.Errorf("--selector %q: %w", o.selector, err)
		}
		if sel.Empty() {
			return fmt.Errorf("--selector %q selects every Deployment: name the release's reconciler, e.g. app.kubernetes.io/instance=hf,app.kubernetes.io/component=reconciler", o.selector)
		}
	}
	return nil
}

// hold reports whether the roll-out stops at the ramp (a canary the
// operator finishes).
func (o rolloutOptions) hold() bool { return o.rampSet && o.rampFor == 0 }

// kubeNamespace is --kube-namespace, else the pod's own namespace.
func kubeNamespace(flag string, readFile func(string) ([]byte, error)) (string, error) {
	if flag != "" {
		return flag, nil
	}
	b, err := readFile(serviceAccountNamespaceFile)
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", errors.New("no Kubernetes namespace: give --kube-namespace (HYPERFLEET_KUBE_NAMESPACE), or run in a pod with a service account")
}

func newRolloutCommand(deployment *string, rate *float64, withClient clientRunner) *cobra.Command {
	var (
		o       rolloutOptions
		buildID string
	)
	cmd := &cobra.Command{
		Use:   "rollout BUILD_ID [--ramp PERCENT [--ramp-for DURATION]] [--selector LABELS]",
		Short: "Roll a release out whose workers only declare their version: promote it, drain the others, remove their Deployments",
		Long: `Roll out BUILD_ID, a version whose workers run with --promote never (the
Helm chart's post-install and post-upgrade hook runs this), in order:

 1. With --selector: wait until the Deployment in the namespace that runs
    BUILD_ID (its hyperfleet.io/build-id annotation, else its
    HYPERFLEET_BUILD_ID) has all its replicas available.
 2. Wait until a worker of BUILD_ID has polled Temporal.
 3. With --ramp: send that share of new workflows to BUILD_ID; with
    --ramp-for, wait that long, else stop here (a canary: run rollout
    again without --ramp to finish, or roll out the old version to go back).
 4. Make BUILD_ID current (telling the replaced version's workflows to move)
    and end any ramp.
 5. Drain every other version that still has live workflows.
 6. With --selector: delete the Deployments it selects that run another
    version, except those of a version that did not drain.

Everything is bounded by --timeout; running it again is safe. The
Deployment of BUILD_ID is never deleted. Kubernetes is reached with
--kubeconfig, else $KUBECONFIG or ~/.kube/config, else in-cluster.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return fmt.Errorf("name one build id: the version to roll out (see 'hyperfleet versions')")
			}
			buildID = args[0]
			return nil
		},
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnvPreRun(cmd, args); err != nil {
				return err
			}
			o.rampSet = cmd.Flags().Changed("ramp")
			return o.validate()
		},
		RunE: withClient(func(ctx context.Context, c client.Client, log zerolog.Logger) error {
			v := versioning.Version{Deployment: *deployment, BuildID: buildID}
			if err := v.Validate(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, o.timeout)
			defer cancel()
			r := rollout{opts: o, v: v, c: c, rate: *rate, log: log}
			if o.selector != "" {
				if err := r.connectKube(); err != nil {
					return err
				}
			}
			return r.run(ctx)
		}),
	}
	cmd.Flags().Float32Var(&o.ramp, "ramp", 0, "first send only this share (0-100, exclusive) of new workflows to BUILD_ID")
	cmd.Flags().DurationVar(&o.rampFor, "ramp-for", 0, "with --ramp, how long to ramp before making BUILD_ID current (0: stay at the ramp)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up after this long, the ramp included")
	cmd.Flags().StringVar(&o.selector, "selector", "", "label selector of the release's reconciler Deployments, e.g. app.kubernetes.io/instance=hf,app.kubernetes.io/component=reconciler (empty: leave Kubernetes alone)")
	cmd.Flags().StringVar(&o.namespace, "kube-namespace", "", "namespace of those Deployments (default: this pod's)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for Kubernetes (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	return cmd
}

// rollout is one run of `hyperfleet versions rollout`.
type rollout struct {
	opts rolloutOptions
	v    versioning.Version
	c    client.Client
	rate float64
	log  zerolog.Logger
	// kube and namespace are set with --selector.
	kube      kubernetes.Interface
	namespace string
}

func (r *rollout) connectKube() error {
	ns, err := kubeNamespace(r.opts.namespace, os.ReadFile)
	if err != nil {
		return err
	}
	cfg, err := kubetransport.RESTConfig(r.opts.kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	r.kube, r.namespace = cs, ns
	return nil
}

func (r *rollout) run(ctx context.Context) error {
	if r.kube != nil {
		if err := waitAvailable(ctx, r.kube, r.namespace, r.opts.selector, r.v.BuildID); err != nil {
			return err
		}
	}
	if _, err := versioning.WaitRegistered(ctx, r.c, r.v); err != nil {
		return err
	}
	cur, err := versioning.Current(ctx, r.c, r.v.Deployment)
	if err != nil {
		return err
	}
	if r.opts.rampSet && cur != r.v {
		if err := versioning.SetRamping(ctx, r.c, r.v, r.opts.ramp); err != nil {
			return err
		}
		fmt.Printf("%s takes %g%% of new reconcile workflows; live ones stay where they are\n", r.v, r.opts.ramp)
		if r.opts.hold() {
			fmt.Printf("holding at the ramp: roll out again without --ramp to finish, or roll out %q to go back\n", cur.BuildID)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out while ramping %s: %w", r.v, ctx.Err())
		case <-time.After(r.opts.rampFor):
		}
	}
	if err := setCurrentVersion(ctx, r.c, r.v, r.rate, r.log); err != nil {
		return err
	}
	if was, err := versioning.ClearRamp(ctx, r.c, r.v.Deployment); err != nil {
		return err
	} else if was.BuildID != "" {
		fmt.Printf("ended the ramp of %s\n", was)
	}
	undrained := r.drainOthers(ctx)
	var errs []error
	if r.kube != nil {
		// Deleting takes a moment even when the drains used up the time.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		deleted, kept, err := retireDeployments(dctx, r.kube, r.namespace, r.opts.selector, r.v.BuildID, undrained)
		cancel()
		for _, name := range deleted {
			fmt.Printf("deleted Deployment %s/%s\n", r.namespace, name)
		}
		for _, k := range kept {
			fmt.Printf("kept Deployment %s/%s: %s\n", r.namespace, k.name, k.reason)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, build := range sortedKeys(undrained) {
		errs = append(errs, fmt.Errorf("version %s: %w", build, undrained[build]))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s is current, but the roll-out is not complete (run it again once fixed; see docs/operator-guide.md, \"Upgrading\"): %w", r.v, errors.Join(errs...))
	}
	fmt.Printf("%s is rolled out\n", r.v)
	return nil
}

// drainOthers drains, side by side within ctx, every version but r.v that
// has live workflows, and returns those that did not drain with why.
func (r *rollout) drainOthers(ctx context.Context) map[string]error {
	undrained := map[string]error{}
	versions, err := versioning.Versions(ctx, r.c, r.v.Deployment)
	if err != nil {
		// Nothing is known drained: keep every old Deployment.
		undrained["*"] = err
		return undrained
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, old := range versions {
		if old == r.v {
			continue
		}
		n, err := versioning.Pinned(ctx, r.c, old)
		if err == nil && n == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err == nil {
				deadline, _ := ctx.Deadline()
				err = drainVersion(ctx, r.c, old, time.Until(deadline), r.rate, r.log)
			}
			if err != nil {
				mu.Lock()
				undrained[old.BuildID] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return undrained
}

// reconcilerDeployment is what the roll-out needs of a Deployment.
type reconcilerDeployment struct {
	name     string
	buildID  string // "": unversioned, or unknown
	deleting bool
}

// keptDeployment is an old Deployment left in place, and why.
type keptDeployment struct{ name, reason string }

// describeDeployment reads the build id a Deployment runs: its annotation
// (the chart's hook mode), else the reconciler container's
// HYPERFLEET_BUILD_ID (a Deployment rendered before the annotation).
func describeDeployment(d appsv1.Deployment) reconcilerDeployment {
	rd := reconcilerDeployment{name: d.Name, deleting: d.DeletionTimestamp != nil}
	if b, ok := d.Annotations[buildIDAnnotation]; ok {
		rd.buildID = b
		return rd
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == envName("build-id") {
				rd.buildID = e.Value
				return rd
			}
		}
	}
	return rd
}

// deploymentsToDelete picks the old Deployments to delete: never one that
// runs build, nor one of a version that did not drain (its workers are the
// only ones that can move its workflows); undrained["*"] keeps them all.
func deploymentsToDelete(ds []reconcilerDeployment, build string, undrained map[string]error) (del []string, kept []keptDeployment) {
	for _, d := range ds {
		switch {
		case d.buildID == build:
			// This release's own Deployment.
		case d.deleting:
			// Already going (a run before this one deleted it).
		case undrained["*"] != nil:
			kept = append(kept, keptDeployment{d.name, "the other versions' live workflows could not be listed"})
		case undrained[d.buildID] != nil:
			kept = append(kept, keptDeployment{d.name, fmt.Sprintf("version %s still has live workflows; only its workers can move them", d.buildID)})
		default:
			del = append(del, d.name)
		}
	}
	return del, kept
}

// retireDeployments deletes the Deployments selector selects in namespace
// that deploymentsToDelete picks. One that is gone already is no error.
func retireDeployments(ctx context.Context, cs kubernetes.Interface, namespace, selector, build string, undrained map[string]error) (deleted []string, kept []keptDeployment, err error) {
	ds, err := listReconcilers(ctx, cs, namespace, selector)
	if err != nil {
		return nil, nil, err
	}
	del, kept := deploymentsToDelete(ds, build, undrained)
	var errs []error
	for _, name := range del {
		err := cs.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		switch {
		case err == nil:
			deleted = append(deleted, name)
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("delete Deployment %s/%s: %w (the hook's Role allows delete on deployments)", namespace, name, err))
		}
	}
	return deleted, kept, errors.Join(errs...)
}

func listReconcilers(ctx context.Context, cs kubernetes.Interface, namespace, selector string) ([]reconcilerDeployment, error) {
	list, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list Deployments %q in namespace %s: %w (the hook's Role allows get and list on deployments)", selector, namespace, err)
	}
	out := make([]reconcilerDeployment, 0, len(list.Items))
	for _, d := range list.Items {
		out = append(out, describeDeployment(d))
	}
	return out, nil
}

// deploymentAvailable says whether every replica of d's current template
// is available, and if not, what is missing.
func deploymentAvailable(d appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case want == 0:
		return false, "it is scaled to 0 replicas: no worker would run the version's workflows"
	case s.ObservedGeneration < d.Generation:
		return false, "its controller has not seen its latest change yet"
	case s.UpdatedReplicas < want || s.AvailableReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas are up to date and %d available", s.UpdatedReplicas, want, s.AvailableReplicas)
	}
	return true, ""
}

// waitAvailable waits, within ctx, until the selected Deployment that runs
// build has every replica available: promoting a version whose pods do
// not run would leave the fleet's new workflows waiting for a worker.
func waitAvailable(ctx context.Context, cs kubernetes.Interface, namespace, selector, build string) error {
	for {
		list, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("list Deployments %q in namespace %s: %w (the hook's Role allows get and list on deployments)", selector, namespace, err)
		}
		why := fmt.Sprint(err)
		found := false
		if err == nil {
			for _, d := range list.Items {
				if describeDeployment(d).buildID != build {
					continue
				}
				found = true
				ok, w := deploymentAvailable(d)
				if ok {
					return nil
				}
				why = fmt.Sprintf("Deployment %s: %s", d.Name, w)
			}
			if !found {
				return fmt.Errorf("no Deployment selected by %q in namespace %s runs build %s (annotation %s): is it the image tag the chart deployed (reconciler.buildId)?",
					selector, namespace, build, buildIDAnnotation)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not promoted, the old versions keep serving: %s (kubectl describe deployment -n %s)", build, why, namespace)
		case <-time.After(2 * time.Second):
		}
	}
}

func sortedKeys(m map[string]error) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
