package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/hyperfleet/hyperfleet/internal/temporalcost"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// burst creates the clusters at once and waits until all are Reconciled.
func (b *bench) burst(ctx context.Context) error {
	fmt.Printf("| mode | clusters | create→Reconciled p50 | p90 | p99 | max | clusters/s | adapter runs/cluster | activity tasks/cluster | workflow tasks/cluster | history events/cluster | actions/cluster |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, mode := range strings.Split(b.o.modes, ",") {
		sys, err := b.start(ctx, mode, reconcile.Options{StabilityWindow: b.o.window})
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		err = b.burstOnce(ctx, mode, sys)
		sys.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
	}
	fmt.Printf("\n%d clusters created by %d concurrent clients\n", b.o.clusters, b.o.concurrency)
	for _, n := range b.notes {
		fmt.Println(n)
	}
	return nil
}

func (b *bench) burstOnce(ctx context.Context, mode string, sys *system) error {
	kubeBefore, err := b.kubeRequests(ctx)
	if err != nil {
		return err
	}
	var cpuBefore map[string]float64
	var dbBefore map[string]int64
	databases := []string{"hyperfleet", "temporal", "temporal_visibility"}
	if sys.tp != nil {
		cpuBefore = processCPU(sys.tp)
		if dbBefore, err = databaseSizes(ctx, sys.tp.DatabaseURL(), databases...); err != nil {
			return err
		}
	}
	var wt *watchers
	var memBefore, memOpen apiMemory
	if sys.tp != nil {
		memBefore = readAPIMemory(sys.tp)
	}
	wctx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	if b.o.watchers > 0 {
		if wt, err = sys.api.watch(wctx, b.o.watchers); err != nil {
			return err
		}
		if sys.tp != nil {
			memOpen = readAPIMemory(sys.tp)
		}
	}
	selfBefore, machineBefore, partsBefore := selfCPU(), machineCPU(), b.machineParts()
	start := time.Now()
	ids, err := sys.api.createClusters(ctx, b.o.clusters, b.o.concurrency)
	if err != nil {
		return err
	}
	var rd *readers
	rctx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	if b.o.readers > 0 {
		rd = sys.api.readReconciliation(rctx, ids, b.o.readers)
	}
	all, err := sys.api.waitAll(ctx, b.o.timeout, "Reconciled", reconciledAt(1))
	if err != nil {
		return err
	}
	if sys.tp != nil {
		b.notes = append(b.notes, fmt.Sprintf("%s, %d clusters: %s", mode, len(all), memoryNote(memBefore, memOpen, readAPIMemory(sys.tp), b.o.watchers)))
	}
	if rd != nil {
		stopReaders()
		rd.stop()
		b.notes = append(b.notes, fmt.Sprintf("%s, %d clusters: %s", mode, len(all), rd.summary(b.o.readers)))
	}
	if wt != nil {
		time.Sleep(2 * time.Second) // the last reports' events
		stopWatchers()
		wt.stop()
		b.notes = append(b.notes, fmt.Sprintf("%s, %d clusters: %s", mode, len(all), wt.summary(b.o.watchers)))
	}
	kubeAfter, err := b.kubeRequests(ctx)
	if err != nil {
		return err
	}
	machine := machineCPU() - machineBefore
	b.notes = append(b.notes, fmt.Sprintf("%s, %d clusters: the whole machine spent %.1f CPU-s (%.1f per 1,000 clusters) in %s, kube-apiserver and the driver included; %s",
		mode, len(all), machine, machine*1000/float64(len(all)), time.Since(start).Round(time.Second),
		partsNote(partsBefore, b.machineParts(), machine, len(all), sys.tp != nil)))
	if sys.tp != nil {
		wall := time.Since(start)
		cpuAfter := processCPU(sys.tp)
		dbAfter, err := databaseSizes(ctx, sys.tp.DatabaseURL(), databases...)
		if err != nil {
			return err
		}
		var growth []string
		for _, d := range databases {
			growth = append(growth, fmt.Sprintf("%s %.1f MB", d, float64(dbAfter[d]-dbBefore[d])/1e6*1000/float64(len(all))))
		}
		b.notes = append(b.notes, fmt.Sprintf("production shape, %d workers, %d clusters, %s from the first create to the last Reconciled; CPU by component:\n\n%s\nDatabase growth per 1,000 clusters: %s",
			b.o.workers, len(all), wall.Round(time.Second), cpuTable(cpuBefore, cpuAfter, len(all), wall), strings.Join(growth, ", ")))
	} else if mode == "temporal" {
		wall, used := time.Since(start), selfCPU()-selfBefore
		b.notes = append(b.notes, fmt.Sprintf("embedded stack, %d clusters, %s from the first create to the last Reconciled: %.1f CPU-s (%.1f per 1,000 clusters, %.2f cores on average; "+
			"the driver's one process: Temporal, API, workers and the load client)", len(all), wall.Round(time.Second), used, used*1000/float64(len(all)), used/wall.Seconds()))
	}
	lat := latencies(all, func(r *resource.Resource) time.Time { return r.CreatedTime })
	var first, last time.Time
	for i := range all {
		c, _ := all[i].Condition(resource.ConditionReady)
		if first.IsZero() || all[i].CreatedTime.Before(first) {
			first = all[i].CreatedTime
		}
		if c.LastTransitionTime.After(last) {
			last = c.LastTransitionTime
		}
	}
	n := float64(len(all))
	label := mode
	if mode == "poll" {
		label = fmt.Sprintf("poll every %s", b.o.pollInterval)
	}
	costCols, err := costColumns(ctx, sys, ids, n)
	if err != nil {
		return err
	}
	fmt.Printf("| %s | %d | %s | %s | %s | %s | %.1f | %.1f | %s\n", label, len(all), secs(pct(lat, 50)), secs(pct(lat, 90)), secs(pct(lat, 99)),
		secs(pct(lat, 100)), n/last.Sub(first).Seconds(), sys.adapterRuns()/n, costCols)
	if sys.tc != nil {
		created := make(map[string]time.Time, len(all))
		for i := range all {
			created[all[i].ID] = all[i].CreatedTime
		}
		b.notes = append(b.notes, fmt.Sprintf("%s, %d clusters: %s", label, len(all), timeline(sys.waits, created)))
	}
	b.notes = append(b.notes, fmt.Sprintf("%s, %d clusters, kube-apiserver requests per cluster: %s", label, len(all), kubeDelta(kubeBefore, kubeAfter, n)))
	return nil
}

// changes measures the cost of each kind of change from the histories.
func (b *bench) changes(ctx context.Context) error {
	sys, err := b.start(ctx, "temporal", reconcile.Options{StabilityWindow: time.Hour})
	if err != nil {
		return err
	}
	defer sys.stop()
	n := b.o.clusters
	fmt.Printf("| change | clusters | to Reconciled p50 | activity tasks | workflow tasks | history events | actions | of which signals | timers | local activities |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var ids []string
	step := func(name string, act func() error, done func(*resource.Resource) bool, since func(*resource.Resource) time.Time) error {
		before, err := sys.cost(ctx, resource.KindCluster, ids)
		if err != nil && ids != nil {
			return err
		}
		start := time.Now()
		if err := act(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p50 := "gone"
		if done != nil {
			all, err := sys.api.waitAll(ctx, b.o.timeout, "done after "+name, done)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if since == nil {
				since = func(*resource.Resource) time.Time { return start }
			}
			if lat := pct(latencies(all, since), 50); lat < 0 {
				p50 = "stays Reconciled" // Ready did not move: nothing to reconcile
			} else {
				p50 = secs(lat)
			}
		} else if err := b.waitGone(ctx, sys, ids); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		time.Sleep(time.Second) // the workflow tasks that follow the last report
		after, err := sys.cost(ctx, resource.KindCluster, ids)
		if err != nil {
			return err
		}
		d := costGrowth(before, after)
		k := float64(len(ids))
		fmt.Printf("| %s | %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", name, len(ids), p50, float64(d.ActivityTasks)/k, float64(d.WorkflowTasks)/k,
			float64(d.Events)/k, float64(d.Actions)/k, float64(d.Signals)/k, float64(d.Timers)/k, float64(d.LocalActivities)/k)
		return nil
	}
	if err := step("create", func() error { ids, err = sys.api.createClusters(ctx, n, b.o.concurrency); return err },
		reconciledAt(1), func(r *resource.Resource) time.Time { return r.CreatedTime }); err != nil {
		return err
	}
	gen := int64(1)
	patch := func(body map[string]any) func() error {
		return func() error {
			for _, id := range ids {
				if _, err := sys.api.do(ctx, http.MethodPatch, "/clusters/"+id, body, http.StatusOK); err != nil {
					return err
				}
			}
			r, _, err := sys.api.get(ctx, ids[0])
			gen = r.Generation
			return err
		}
	}
	if err := step("spec PATCH", patch(map[string]any{"spec": map[string]any{"platform": map[string]any{"type": "gcp"}, "nodes": 5}}),
		func(r *resource.Resource) bool { return r.Generation == gen && isReady(r) }, nil); err != nil {
		return err
	}
	if err := step("label PATCH", patch(map[string]any{"labels": map[string]string{"shard": "x", "env": "bench"}}),
		func(r *resource.Resource) bool { return r.Generation == gen && isReady(r) }, nil); err != nil {
		return err
	}
	return step("DELETE", func() error {
		for _, id := range ids {
			if _, err := sys.api.do(ctx, http.MethodDelete, "/clusters/"+id, nil, http.StatusAccepted); err != nil {
				return err
			}
		}
		return nil
	}, nil, nil)
}

func (b *bench) waitGone(ctx context.Context, sys *system, ids []string) error {
	deadline := time.Now().Add(b.o.timeout)
	for _, id := range ids {
		for {
			_, found, err := sys.api.get(ctx, id)
			if err != nil {
				return err
			}
			if !found {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster %s still there after %s", id, b.o.timeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// idleScenario measures what Reconciled clusters cost when nothing
// changes: the self-healing rounds of the stability window.
func (b *bench) idleScenario(ctx context.Context) error {
	window := b.o.window
	if window == 0 {
		window = 30 * time.Second
	}
	mode := strings.Split(b.o.modes, ",")[0]
	sys, err := b.start(ctx, mode, b.reconcileOptions(window))
	if err != nil {
		return err
	}
	defer sys.stop()
	cpuNow := b.measuredCPU(sys)
	// The stack with no clusters: what it costs to be up.
	cpu0 := cpuNow()
	var procs0 map[string]float64
	if sys.tp != nil {
		procs0 = processCPU(sys.tp)
	}
	time.Sleep(20 * time.Second)
	base := (cpuNow() - cpu0) / 20
	if sys.tp != nil {
		fmt.Printf("At rest with no clusters (20 s):\n\n%s\n", cpuTable(procs0, processCPU(sys.tp), 1000, 20*time.Second))
	}

	ids, err := sys.api.createClusters(ctx, b.o.clusters, b.o.concurrency)
	if err != nil {
		return err
	}
	if _, err := sys.api.waitAll(ctx, b.o.timeout, "Reconciled", reconciledAt(1)); err != nil {
		return err
	}
	before, err := sys.cost(ctx, resource.KindCluster, ids)
	if err != nil {
		return err
	}
	cpu1 := cpuNow()
	var procs1 map[string]float64
	if sys.tp != nil {
		procs1 = processCPU(sys.tp)
	}
	time.Sleep(b.o.idle)
	used := cpuNow() - cpu1
	if sys.tp != nil {
		fmt.Printf("%d Reconciled clusters, stability window %s, for %s (the per-1,000 column is per 1,000 clusters):\n\n%s\n",
			len(ids), window, b.o.idle, cpuTable(procs1, processCPU(sys.tp), len(ids), b.o.idle))
	}
	after, err := sys.cost(ctx, resource.KindCluster, ids)
	if err != nil {
		return err
	}
	d := costGrowth(before, after)
	all, err := sys.api.clusters(ctx)
	if err != nil {
		return err
	}
	reconciled := 0
	for i := range all {
		if isReady(&all[i]) {
			reconciled++
		}
	}
	idle := b.o.idle.Seconds()
	perAdapterRun := 0.0
	if d.ActivityTasks > 0 {
		perAdapterRun = (used - base*idle) / float64(d.ActivityTasks)
	}
	rounds := float64(len(ids)) * idle / window.Seconds()
	fmt.Printf("| clusters | stability window | idle | rounds expected | activity tasks | actions | CPU (cores) | CPU at rest (cores) | CPU-ms per adapter run | Reconciled at the end |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Printf("| %d | %s | %s | %.0f | %d | %d | %.2f | %.2f | %.1f | %d |\n", len(ids), window, b.o.idle, rounds, d.ActivityTasks, d.Actions,
		used/idle, base, perAdapterRun*1000, reconciled)
	if perAdapterRun > 0 {
		b.printIdleCapacity(perAdapterRun, base, float64(d.Actions)/rounds)
	}
	return nil
}

// measuredCPU returns what the measured processes used so far: this one
// (the embedded stack) or the production shape's, and the control plane's.
func (b *bench) measuredCPU(sys *system) func() float64 {
	if sys.tp == nil {
		return func() float64 { return sumCPU(b.machineParts()) }
	}
	return func() float64 { return sumCPU(processCPU(sys.tp)) }
}

func sumCPU(parts map[string]float64) float64 {
	total := 0.0
	for _, v := range parts {
		total += v
	}
	return total
}

// printIdleCapacity prints how many Reconciled clusters fit on 2 cores at
// the default 30-minute stability window, from the CPU-s an adapter run
// costs, the cores the system uses at rest and the actions of one round.
func (b *bench) printIdleCapacity(perAdapterRun, base, actionsPerRound float64) {
	adapters := float64(len(b.w.adapters))
	perCluster := perAdapterRun * adapters // CPU-s per self-healing round of one cluster
	capacity := (0.7*float64(2) - base) * (30 * 60) / perCluster
	fmt.Printf("\nAt the default 30-minute window one cluster costs %.1f CPU-ms per round (%d adapters), %.2f rounds an hour: "+
		"about %.0f Reconciled clusters fit under 70%% of 2 cores (less %.2f cores at rest).\n", perCluster*1000, len(b.w.adapters), 2.0, capacity, base)
	fmt.Printf("Actions per Reconciled cluster per hour at a 30-minute window: %.1f\n", actionsPerRound*2)
}

// costColumns are the burst table's cost columns: what the workflows of
// ids cost, per cluster of n; empty without Temporal.
func costColumns(ctx context.Context, sys *system, ids []string, n float64) (string, error) {
	if sys.tc == nil {
		return "| | | |", nil
	}
	time.Sleep(time.Second) // the workflow tasks that follow the last report
	costs, err := sys.cost(ctx, resource.KindCluster, ids)
	if err != nil {
		return "", err
	}
	var sum temporalcost.Cost
	for _, c := range costs {
		sum = sum.Add(c)
	}
	return fmt.Sprintf("%.1f | %.1f | %.1f | %.1f |", float64(sum.ActivityTasks)/n, float64(sum.WorkflowTasks)/n, float64(sum.Events)/n, float64(sum.Actions)/n), nil
}

// costGrowth is what the workflows cost from before to after, summed.
func costGrowth(before, after map[string]temporalcost.Cost) temporalcost.Cost {
	var d temporalcost.Cost
	for id, c := range after {
		d = d.Add(c.Sub(before[id]))
	}
	return d
}

// machineParts is the CPU time (seconds) used so far by the parts of the
// machine outside the system under test: the control plane's processes,
// and this process (on the production shape the load, the pod stand-in
// and the API balancer; on the embedded stack all of it).
func (b *bench) machineParts() map[string]float64 {
	out := map[string]float64{"this process": selfCPU()}
	for name, pid := range b.kube.Processes() {
		out[name] = procCPU(pid)
	}
	return out
}

// partsNote splits a run's machine CPU: the control plane's processes,
// this process, and what is left (on the production shape its processes,
// HyperFleet's, Temporal's and PostgreSQL's; the kernel's threads), each
// per 1,000 clusters, so two shapes' machine figures can be told apart.
func partsNote(before, after map[string]float64, machine float64, clusters int, production bool) string {
	per := func(v float64) float64 { return v * 1000 / float64(clusters) }
	names := []string{"kube-apiserver", "etcd", "kube-controller-manager", "this process"}
	parts := make([]string, 0, len(names)+1)
	rest := machine
	for _, n := range names {
		d := after[n] - before[n]
		rest -= d
		label := n
		if n == "this process" {
			label = "the driver (the embedded stack, the load and the pod stand-in)"
			if production {
				label = "the driver (the load, the pod stand-in and the API balancer)"
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", label, per(d)))
	}
	restLabel := "the rest of the machine"
	if production {
		restLabel = "the rest of the machine (the production shape's processes, the kernel)"
	}
	parts = append(parts, fmt.Sprintf("%s %.1f", restLabel, per(rest)))
	return "per 1,000 clusters: " + strings.Join(parts, ", ")
}

// selfCPU is the CPU time (seconds) this process used so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime)
}

// machineCPU is the CPU time (seconds) every core of the machine spent
// busy since boot: /proc/stat's first line without idle and iowait.
func machineCPU() float64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	busy := 0.0
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		v, _ := strconv.ParseFloat(f, 64)
		busy += v
	}
	return busy / 100
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// procCPU reads utime+stime of a process from /proc (clock ticks of 1/100 s).
func procCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	// Fields after the command name (which may hold spaces) start at ") ".
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (ut + st) / 100
}

// reconcileOptions are the workflows' options: --stability-window (window
// when that is 0) and --watched-stability-window.
func (b *bench) reconcileOptions(window time.Duration) reconcile.Options {
	if b.o.window > 0 {
		window = b.o.window
	}
	return reconcile.Options{StabilityWindow: window, WatchedStabilityWindow: b.o.watched}
}

// single creates clusters one at a time, each after the last is
// Reconciled, and prints create→Ready of each mode: the latency of a lone
// change on an idle system, which admission control must not slow. A
// second table splits each create's time at its workflow's first events
// (medians): the hand-off (commit to the workflow's start, the relay and
// Temporal's start), the first workflow task's wait for a worker, and the
// worker's part up to the report that made it Ready (the adapters' runs,
// their API calls and the status write).
func (b *bench) single(ctx context.Context) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	var rows, parts []string
	for _, mode := range strings.Split(b.o.modes, ",") {
		sys, err := b.start(ctx, mode, reconcile.Options{StabilityWindow: b.o.window})
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		lat, split, err := b.singles(ctx, sys)
		sys.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		slices.Sort(lat)
		rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s |", mode, len(lat), ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 100))))
		for i := range split {
			slices.Sort(split[i])
		}
		parts = append(parts, fmt.Sprintf("| %s | %s | %s | %s |", mode, ms(pct(split[0], 50)), ms(pct(split[1], 50)), ms(pct(split[2], 50))))
	}
	fmt.Printf("| mode | clusters | create→Reconciled p50 | p90 | max |\n|---|---:|---:|---:|---:|\n%s\n\n", strings.Join(rows, "\n"))
	fmt.Printf("| mode | commit→workflow start | first workflow task: scheduled→started | started→Ready |\n|---|---:|---:|---:|\n%s\n", strings.Join(parts, "\n"))
	return nil
}

// singles returns each create's create→Ready and its three parts (see
// single), in that order.
func (b *bench) singles(ctx context.Context, sys *system) ([]time.Duration, [3][]time.Duration, error) {
	// A first cluster warms the stack (connections, caches); not counted.
	var lat []time.Duration
	var split [3][]time.Duration
	for i := 0; i <= b.o.clusters; i++ {
		ids, err := sys.api.createClusters(ctx, 1, 1)
		if err != nil {
			return nil, split, err
		}
		deadline := time.Now().Add(b.o.timeout)
		for {
			r, ok, err := sys.api.get(ctx, ids[0])
			if err != nil {
				return nil, split, err
			}
			if ok && reconciledAt(1)(&r) {
				c, _ := r.Condition(resource.ConditionReady)
				if i > 0 {
					lat = append(lat, c.LastTransitionTime.Sub(r.CreatedTime))
					events, err := sys.history(ctx, reconcile.WorkflowID(resource.KindCluster, ids[0]))
					if err != nil {
						return nil, split, err
					}
					if p, ok := createParts(events, r.CreatedTime, c.LastTransitionTime); ok {
						for k := range p {
							split[k] = append(split[k], p[k])
						}
					}
				}
				break
			}
			if time.Now().After(deadline) {
				return nil, split, fmt.Errorf("cluster %s not Reconciled after %s", ids[0], b.o.timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return lat, split, nil
}

// createParts splits created→ready at the history's first event and its
// first workflow task's start.
func createParts(events []*historypb.HistoryEvent, created, ready time.Time) ([3]time.Duration, bool) {
	var start, scheduled, started time.Time
	for _, e := range events {
		t := e.GetEventTime().AsTime()
		switch {
		case start.IsZero():
			start = t
		case e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED && scheduled.IsZero():
			scheduled = t
		case e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED && started.IsZero():
			started = t
		}
	}
	if start.IsZero() || scheduled.IsZero() || started.IsZero() {
		return [3]time.Duration{}, false
	}
	return [3]time.Duration{start.Sub(created), started.Sub(scheduled), ready.Sub(started)}, true
}
