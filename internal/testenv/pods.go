package testenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodStandIn plays the kubelet's part for the controllers that run here:
// a while after a pod exists it reports the pod's containers as a kubelet
// would, so the real Job, ReplicaSet and Deployment controllers move their
// objects on. Pods of a Job succeed; every other pod runs and turns Ready.
type PodStandIn struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// Marked counts the pods the stand-in has moved on.
	mu     sync.Mutex
	marked int
}

// StartPodStandIn starts the stand-in: each pod is moved on delay after the
// stand-in first sees it. Stop ends it.
func (k *Kube) StartPodStandIn(delay time.Duration) (*PodStandIn, error) {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &PodStandIn{cancel: cancel}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod, ok := obj.(*corev1.Pod)
			if !ok || pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" || pod.DeletionTimestamp != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				select {
				case <-ctx.Done():
					return
				case <-time.After(delay):
				}
				if err := markPod(ctx, cs, pod.Namespace, pod.Name, false); err == nil {
					p.mu.Lock()
					p.marked++
					p.mu.Unlock()
				}
			}()
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	synced := make(chan bool, 1)
	go func() { synced <- cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) }()
	select {
	case ok := <-synced:
		if !ok {
			cancel()
			return nil, fmt.Errorf("pod stand-in: informer did not sync")
		}
	case <-time.After(30 * time.Second):
		cancel()
		return nil, fmt.Errorf("pod stand-in: informer did not sync within 30s")
	}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); <-ctx.Done(); factory.Shutdown() }()
	return p, nil
}

// Marked is how many pods the stand-in has moved on so far.
func (p *PodStandIn) Marked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.marked
}

// Stop ends the stand-in.
func (p *PodStandIn) Stop() {
	p.cancel()
	p.wg.Wait()
}

// markPod reports a pod's containers as started: a Job's pod as exited 0
// (Succeeded) or, with fail, 1 (Failed); any other as running and ready.
func markPod(ctx context.Context, cs kubernetes.Interface, namespace, name string, fail bool) error {
	for attempt := 0; attempt < 5; attempt++ {
		pod, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return err
		}
		if err != nil {
			return err
		}
		if pod.DeletionTimestamp != nil {
			return nil
		}
		now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		job := false
		for _, o := range pod.OwnerReferences {
			if o.Kind == "Job" {
				job = true
			}
		}
		pod.Status.StartTime = &now
		pod.Status.HostIP, pod.Status.PodIP = "127.0.0.1", "10.1.0.1"
		var statuses []corev1.ContainerStatus
		for _, c := range pod.Spec.Containers {
			st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "standin://" + string(pod.UID) + "/" + c.Name}
			if job {
				st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}
				if fail {
					st.State.Terminated.ExitCode, st.State.Terminated.Reason = 1, "Error"
				}
			} else {
				st.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
				st.Ready, st.Started = true, ptrTo(true)
			}
			statuses = append(statuses, st)
		}
		pod.Status.ContainerStatuses = statuses
		cond := func(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) corev1.PodCondition {
			return corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now}
		}
		if job {
			pod.Status.Phase = corev1.PodSucceeded
			if fail {
				pod.Status.Phase = corev1.PodFailed
			}
			pod.Status.Conditions = []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue, ""),
				cond(corev1.PodInitialized, corev1.ConditionTrue, "PodCompleted"),
				cond(corev1.PodReady, corev1.ConditionFalse, "PodCompleted"),
				cond(corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted")}
		} else {
			pod.Status.Phase = corev1.PodRunning
			pod.Status.Conditions = []corev1.PodCondition{cond(corev1.PodScheduled, corev1.ConditionTrue, ""),
				cond(corev1.PodInitialized, corev1.ConditionTrue, ""),
				cond(corev1.PodReady, corev1.ConditionTrue, ""),
				cond(corev1.ContainersReady, corev1.ConditionTrue, "")}
		}
		_, err = cs.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("pod stand-in: set status of pod %s/%s: %w", namespace, name, err)
		}
		return nil
	}
	return fmt.Errorf("pod stand-in: pod %s/%s kept changing", namespace, name)
}

func ptrTo[T any](v T) *T { return &v }

// Processes names the control plane's processes (etcd, kube-apiserver,
// kube-controller-manager) by their process ids, for measuring what they
// cost.
func (k *Kube) Processes() map[string]int {
	out := make(map[string]int, len(k.procs))
	for _, p := range k.procs {
		if p.cmd.Process != nil {
			out[p.name] = p.cmd.Process.Pid
		}
	}
	return out
}
