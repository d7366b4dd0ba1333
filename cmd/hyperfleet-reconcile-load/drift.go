package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
)

// driftTarget is one kind of object an adapter applied, deleted behind its
// back: uid reads the object's current uid ("" while it does not exist or
// is being deleted), remove deletes it.
type driftTarget struct {
	name   string
	uid    func(ctx context.Context, clusterID string) (types.UID, error)
	remove func(ctx context.Context, clusterID string) error
}

// driftScenario measures how long an object an adapter applied stays gone
// after someone deletes it: --clusters Reconciled clusters, then for each
// cluster and each kind of object the workload applies, one deletion at a
// time, timed until a new object (another uid) exists. The workflows run
// with their default windows, so a repair within seconds is the watch's.
func (b *bench) driftScenario(ctx context.Context) error {
	targets, err := b.driftTargets()
	if err != nil {
		return err
	}
	mode := strings.Split(b.o.modes, ",")[0]
	sys, err := b.start(ctx, mode, b.reconcileOptions(0))
	if err != nil {
		return err
	}
	defer sys.stop()
	ids, err := sys.api.createClusters(ctx, b.o.clusters, b.o.concurrency)
	if err != nil {
		return err
	}
	if _, err := sys.api.waitAll(ctx, b.o.timeout, "Reconciled", reconciledAt(1)); err != nil {
		return err
	}
	fmt.Printf("| object deleted | deletions | p50 | max |\n|---|---:|---:|---:|\n")
	for _, t := range targets {
		var took []time.Duration
		for _, id := range ids {
			d, err := repairTime(ctx, t, id, b.o.timeout)
			if err != nil {
				return fmt.Errorf("%s of cluster %s: %w", t.name, id, err)
			}
			took = append(took, d)
		}
		slices.Sort(took)
		fmt.Printf("| %s | %d | %s | %s |\n", t.name, len(took), secs(pct(took, 0.5)), secs(took[len(took)-1]))
	}
	return nil
}

// repairTime deletes one object and waits for its successor.
func repairTime(ctx context.Context, t driftTarget, id string, timeout time.Duration) (time.Duration, error) {
	before, err := t.uid(ctx, id)
	if err != nil || before == "" {
		return 0, fmt.Errorf("not there before the deletion (uid %q): %v", before, err)
	}
	start := time.Now()
	if err := t.remove(ctx, id); err != nil {
		return 0, fmt.Errorf("delete: %w", err)
	}
	// Back means another uid, or the object seen gone and then there
	// again: Maestro derives a ManifestWork's uid from its name, so the
	// re-created one has the same.
	gone := false
	for time.Since(start) < timeout {
		now, err := t.uid(ctx, id)
		if err != nil {
			return 0, err
		}
		gone = gone || now == ""
		if now != "" && (now != before || gone) {
			return time.Since(start), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("not re-created within %s", timeout)
}

// driftTargets are the objects of the workload's adapters that can be
// deleted behind their backs.
func (b *bench) driftTargets() ([]driftTarget, error) {
	cs, err := kubernetes.NewForConfig(b.kube.Config)
	if err != nil {
		return nil, err
	}
	switch b.w.name {
	case "shipped":
		// landing-zone: namespace <cluster id> holding ConfigMap cluster-info.
		return []driftTarget{
			{name: "ConfigMap cluster-info", uid: func(ctx context.Context, id string) (types.UID, error) {
				cm, err := cs.CoreV1().ConfigMaps(id).Get(ctx, "cluster-info", metav1.GetOptions{})
				return liveUID(cm.ObjectMeta, err)
			}, remove: func(ctx context.Context, id string) error {
				return cs.CoreV1().ConfigMaps(id).Delete(ctx, "cluster-info", metav1.DeleteOptions{})
			}},
			namespaceTarget(cs, func(id string) string { return id }),
		}, nil
	case "namespace", "chain":
		return []driftTarget{namespaceTarget(cs, func(id string) string { return strings.ToLower(id) + "-cl-namespace" })}, nil
	case "maestro":
		return b.manifestWorkTargets()
	}
	return nil, fmt.Errorf("the drift scenario knows no objects of the %s workload", b.w.name)
}

func namespaceTarget(cs kubernetes.Interface, name func(id string) string) driftTarget {
	return driftTarget{name: "Namespace (and all it holds)", uid: func(ctx context.Context, id string) (types.UID, error) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name(id), metav1.GetOptions{})
		if err == nil && ns.Status.Phase != corev1.NamespaceActive {
			return "", nil
		}
		return liveUID(ns.ObjectMeta, err)
	}, remove: func(ctx context.Context, id string) error {
		return cs.CoreV1().Namespaces().Delete(ctx, name(id), metav1.DeleteOptions{})
	}}
}

// manifestWorkTargets delete upstream cl-maestro's ManifestWork through
// Maestro, as another client of the adapter's source would: the agent
// removes what it applied and confirms, and the adapter's worker hears of
// it on its status stream.
func (b *bench) manifestWorkTargets() ([]driftTarget, error) {
	cfg := b.maestro.Apply(maestrotransport.Config{SourceID: "cl-maestro", Insecure: true})
	c, err := maestrotransport.New(cfg, zerolog.Nop())
	if err != nil {
		return nil, err
	}
	tr := maestrotransport.NewTransport(c)
	ref := func(id string) transport.Ref {
		return transport.Ref{APIVersion: maestrotransport.APIVersion, Kind: maestrotransport.Kind, Name: id + "-cl-maestro"}
	}
	const consumer = "cluster1"
	return []driftTarget{{name: "ManifestWork, through Maestro", uid: func(ctx context.Context, id string) (types.UID, error) {
		obj, err := tr.Get(ctx, consumer, ref(id))
		if err != nil || obj == nil {
			return "", err
		}
		meta, _ := obj["metadata"].(map[string]any)
		if _, deleting := meta["deletionTimestamp"]; deleting {
			return "", nil
		}
		uid, _ := meta["uid"].(string)
		return types.UID(uid), nil
	}, remove: func(ctx context.Context, id string) error {
		return tr.Delete(ctx, consumer, ref(id), "Background")
	}}}, nil
}

// liveUID is the uid of an object read with err, "" when it does not exist
// or is being deleted.
func liveUID(m metav1.ObjectMeta, err error) (types.UID, error) {
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	case m.DeletionTimestamp != nil:
		return "", nil
	}
	return m.UID, nil
}
