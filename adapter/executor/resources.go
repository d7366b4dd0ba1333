package executor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
	"github.com/hyperfleet/hyperfleet/phase"
)

// resources applies, deletes and discovers each resource in order. An apply
// failure stops the phase; a delete failure is recorded and the next
// resource is processed.
func (e *Engine) resources(ctx context.Context, st *State) {
	tr := &st.Trace.Resources
	switch {
	case st.Meta.ExecutionError != nil:
		tr.Outcome, tr.Reason = phase.Skipped, "an earlier phase failed"
		return
	case st.Meta.ResourcesSkipped:
		tr.Outcome, tr.Reason = phase.Skipped, st.Meta.SkipReason
		return
	}
	tr.Outcome = phase.Success
	if e.observeFirst {
		e.observeCluster(ctx, st)
	}
	for i := range e.task.Resources {
		r := &e.task.Resources[i]
		step, applyErr := e.resource(ctx, st, r)
		tr.Steps = append(tr.Steps, step)
		if step.Error != "" {
			se := StepError{Phase: phase.Resources, Step: r.Name, Message: step.Error}
			if st.Meta.ResourceErrors == nil {
				st.Meta.ResourceErrors = map[string]StepError{}
			}
			st.Meta.ResourceErrors[r.Name] = se
			st.Meta.fail(se)
			tr.Outcome, tr.Reason = phase.Failed, st.Meta.ExecutionError.Message
			e.opts.Metrics.Resource(e.name, r.Client(), strings.ToLower(string(step.Operation)), "error")
		} else {
			e.opts.Metrics.Resource(e.name, r.Client(), strings.ToLower(string(step.Operation)), "ok")
		}
		if applyErr {
			return
		}
	}
}

// observeCluster discovers the current state of every resource before any is
// touched, so a lifecycle expression such as
// `is_deleting && !resources.?config.hasValue()` sees the config however
// the resources are ordered: the namespace can be listed (and created)
// first and still wait for the config map to be gone before its deletion.
// A resource that cannot be read yet is left absent; its own step reports
// the error.
func (e *Engine) observeCluster(ctx context.Context, st *State) {
	data := e.templateData(st, nil)
	for i := range e.task.Resources {
		r := &e.task.Resources[i]
		t, ok := e.opts.Transports[r.Client()]
		if !ok || r.Discovery == nil {
			continue
		}
		manifest, err := e.renderManifest(r, data)
		if err != nil {
			continue
		}
		target := ""
		if r.Transport.Maestro != nil {
			if target, err = e.render(r.Transport.Maestro.TargetCluster, data); err != nil {
				continue
			}
		}
		if obj, err := e.discover(ctx, t, target, r, manifest, nil, data); err == nil {
			e.setDiscovered(st, r, obj)
		}
	}
}

// resource handles one resource; applyErr says whether a failure must stop
// the phase (apply) or not (delete).
func (e *Engine) resource(ctx context.Context, st *State, r *taskconfig.Resource) (ResourceStep, bool) {
	step := ResourceStep{Name: r.Name, Transport: r.Client()}
	fail := func(op Operation, err error) (ResourceStep, bool) {
		step.Operation, step.Error = op, err.Error()
		return step, op != OpDelete
	}
	t, ok := e.opts.Transports[r.Client()]
	if !ok {
		return fail(OpError, fmt.Errorf("the %s transport is not configured for this adapter", r.Client()))
	}
	data := e.templateData(st, nil)
	target := ""
	if r.Transport.Maestro != nil {
		var err error
		if target, err = e.render(r.Transport.Maestro.TargetCluster, data); err != nil {
			return fail(OpError, fmt.Errorf("target_cluster: %w", err))
		}
		step.Target = target
	}
	manifest, err := e.renderManifest(r, data)
	if err != nil {
		return fail(OpError, err)
	}
	ref := transport.RefOf(manifest)
	step.Kind, step.Namespace, step.Object, step.Manifest = ref.Kind, ref.Namespace, ref.Name, manifest
	if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		return fail(OpError, errors.New("the rendered manifest needs apiVersion, kind and metadata.name"))
	}
	if w, ok := t.(transport.Watcher); ok && w.Watches() {
		e.stamp(st, manifest)
	}

	if d := r.Lifecycle; d != nil && d.Delete != nil {
		del, err := e.evalBool(ctx, d.Delete.When.Expression, st.celVars(e.name, e.version))
		if err != nil {
			return fail(OpError, fmt.Errorf("lifecycle.delete.when: %w", err))
		}
		if del {
			return e.deleteResource(ctx, st, t, target, r, manifest, step, data)
		}
	}

	live, err := t.Get(ctx, target, ref)
	if err != nil {
		return fail(OpError, err)
	}
	applied, gated, err := e.apply(ctx, st, t, target, r, live, manifest, &step)
	if gated {
		return step, false
	}
	if err != nil {
		return fail(step.Operation, err)
	}
	found, err := e.discover(ctx, t, target, r, manifest, applied, data)
	if err != nil {
		return fail(step.Operation, fmt.Errorf("discovery: %w", err))
	}
	if found == nil {
		// The object was just applied, so a discovery that does not find
		// it looks for something else (a wrong name or selector): every
		// later step and the status would describe an object that is not
		// the adapter's. Upstream fails the resources phase here too.
		return fail(step.Operation, e.notDiscovered(r, manifest, target, step.Operation, data))
	}
	e.setDiscovered(st, r, found)
	step.Discovered = true
	return step, false
}

// apply creates, updates, recreates or skips the object by what is live,
// recording the operation in step; gated says lifecycle.create.when kept
// it from being created.
func (e *Engine) apply(ctx context.Context, st *State, t transport.Transport, target string, r *taskconfig.Resource,
	live, manifest transport.Object, step *ResourceStep) (applied transport.Object, gated bool, err error) {
	switch {
	case live == nil:
		if c := r.Lifecycle; c != nil && c.Create != nil {
			ok, err := e.evalBool(ctx, c.Create.When.Expression, st.celVars(e.name, e.version))
			if err != nil {
				step.Operation = OpError
				return nil, false, fmt.Errorf("lifecycle.create.when: %w", err)
			}
			if !ok {
				step.Operation, step.Message = OpCreateGated, "lifecycle.create.when is false: not created"
				return nil, true, nil
			}
		}
		step.Operation = OpCreate
		applied, err = t.Create(ctx, target, manifest)
	case transport.Annotation(live, taskconfig.GenerationAnnotation) == transport.Annotation(manifest, taskconfig.GenerationAnnotation) &&
		transport.SameStamp(live, manifest):
		step.Operation, applied = OpSkip, live
	case r.RecreateOnChange:
		step.Operation = OpRecreate
		applied, err = e.recreate(ctx, t, target, transport.RefOf(manifest), manifest)
	default:
		step.Operation = OpUpdate
		applied, err = t.Update(ctx, target, manifest)
	}
	return applied, false, err
}

// notDiscovered says what the resource's discovery looked for after an
// apply and did not find, next to what was applied.
func (e *Engine) notDiscovered(r *taskconfig.Resource, manifest transport.Object, target string, op Operation, data map[string]any) error {
	ref := transport.RefOf(manifest)
	applied := map[Operation]string{OpCreate: "created", OpUpdate: "updated", OpSkip: "already up to date", OpRecreate: "recreated"}[op]
	d := r.Discovery
	if d == nil || d.ByName == "" && d.BySelectors == nil {
		return fmt.Errorf("resource %s: %s %q was %s, but reading it back found nothing", r.Name, ref.Kind, ref.Name, applied)
	}
	where := ""
	ns, _ := e.render(d.Namespace, data)
	switch {
	case ns == "*":
		where = " in any namespace"
	case ns != "":
		where = fmt.Sprintf(" in namespace %q", ns)
	case d.ByName != "" && ref.Namespace != "":
		where = fmt.Sprintf(" in namespace %q", ref.Namespace)
	}
	if target != "" {
		where += fmt.Sprintf(" on %q", target)
	}
	// "not found", upstream's words: its clients and test suites match on
	// them.
	var looked string
	if d.ByName != "" {
		name, _ := e.render(d.ByName, data)
		looked = fmt.Sprintf("discovery.by_name %q: %s not found%s (no object of that name)", name, ref.Kind, where)
	} else {
		labels := make([]string, 0, len(d.BySelectors.LabelSelector))
		for k, v := range d.BySelectors.LabelSelector {
			rv, _ := e.render(v, data)
			labels = append(labels, k+"="+rv)
		}
		sort.Strings(labels)
		looked = fmt.Sprintf("discovery.by_selectors (label_selector %s): %s not found%s (no object with those labels)", strings.Join(labels, ","), ref.Kind, where)
	}
	return fmt.Errorf("resource %s: %s %q was %s, but %s; make the discovery match the applied object's name or labels",
		r.Name, ref.Kind, ref.Name, applied, looked)
}

// stamp labels the manifest with this adapter and the resource it acts
// for, so the worker's watch can wake the resource's workflow when the
// object changes.
func (e *Engine) stamp(st *State, manifest transport.Object) {
	transport.Stamp(manifest, e.name, st.Event.Kind, st.Event.ID)
}

// deleteResource deletes the discovered object, then rediscovers it: gone
// objects leave the context so dependents can cascade in the same run; ones
// still terminating stay until a later run.
func (e *Engine) deleteResource(ctx context.Context, st *State, t transport.Transport, target string, r *taskconfig.Resource,
	manifest transport.Object, step ResourceStep, data map[string]any) (ResourceStep, bool) {
	step.Operation = OpDelete
	existing, err := e.discover(ctx, t, target, r, manifest, nil, data)
	if err != nil {
		step.Error = fmt.Sprintf("discovery before delete: %v", err)
		return step, false
	}
	if existing == nil {
		step.Operation, step.Message = OpAbsent, "already gone"
		e.setDiscovered(st, r, nil)
		return step, false
	}
	policy := r.Lifecycle.Delete.PropagationPolicy
	if policy == "" {
		policy = taskconfig.PropagationBackground
	}
	if err := t.Delete(ctx, target, transport.RefOf(existing), policy); err != nil {
		step.Error = err.Error()
		e.setDiscovered(st, r, existing)
		step.Discovered = true
		return step, false
	}
	after, err := e.discover(ctx, t, target, r, manifest, nil, data)
	if err != nil {
		step.Error = fmt.Sprintf("discovery after delete: %v", err)
		return step, false
	}
	e.setDiscovered(st, r, after)
	step.Discovered = after != nil
	if after != nil {
		step.Message = "deletion in progress"
	} else {
		step.Message = "deleted"
	}
	return step, false
}

// recreate deletes the object, waits until it is gone, then creates it.
func (e *Engine) recreate(ctx context.Context, t transport.Transport, target string, ref transport.Ref, manifest transport.Object) (transport.Object, error) {
	if err := t.Delete(ctx, target, ref, taskconfig.PropagationBackground); err != nil {
		return nil, err
	}
	// Wall-clock time on purpose: this waits for the cluster to finish a
	// deletion, and the engine's injectable clock (Options.Now, what CEL and
	// templates see) is frozen in tests.
	deadline := time.Now().Add(e.opts.RecreateTimeout)
	for {
		live, err := t.Get(ctx, target, ref)
		if err != nil {
			return nil, err
		}
		if live == nil {
			return t.Create(ctx, target, manifest)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("recreate %s: the old object is still terminating after %s; the next run retries", ref, e.opts.RecreateTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// discover reads the resource back: by name, by labels, or (without a
// discovery block) as the object just applied.
func (e *Engine) discover(ctx context.Context, t transport.Transport, target string, r *taskconfig.Resource,
	manifest, applied transport.Object, data map[string]any) (transport.Object, error) {
	ref := transport.RefOf(manifest)
	d := r.Discovery
	if d == nil {
		if applied != nil {
			return applied, nil
		}
		return t.Get(ctx, target, ref)
	}
	ns, err := e.render(d.Namespace, data)
	if err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	if d.ByName != "" {
		name, err := e.render(d.ByName, data)
		if err != nil {
			return nil, fmt.Errorf("by_name: %w", err)
		}
		look := transport.Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: name}
		if ns != "" && ns != "*" {
			look.Namespace = ns
		}
		return t.Get(ctx, target, look)
	}
	sel := map[string]string{}
	for k, v := range d.BySelectors.LabelSelector {
		rv, err := e.render(v, data)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", k, err)
		}
		sel[k] = rv
	}
	items, err := t.List(ctx, target, transport.Query{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ns, Labels: sel})
	if err != nil {
		return nil, err
	}
	return newest(items), nil
}

// newest picks among several matches the one at the highest generation
// annotation, then the most recently created: the current object when older
// generations (a Job per generation) are still around.
func newest(items []transport.Object) transport.Object {
	if len(items) == 0 {
		return nil
	}
	sort.SliceStable(items, func(i, j int) bool {
		gi, gj := genOf(items[i]), genOf(items[j])
		if gi != gj {
			return gi > gj
		}
		return created(items[i]) > created(items[j])
	})
	return items[0]
}

// genOf reads an object's generation annotation; a missing or malformed
// one counts as 0 (older than anything the adapter applied).
func genOf(o transport.Object) int64 {
	g, err := strconv.ParseInt(transport.Annotation(o, taskconfig.GenerationAnnotation), 10, 64)
	if err != nil {
		return 0
	}
	return g
}

func created(o transport.Object) string {
	meta, _ := o["metadata"].(map[string]any)
	s, _ := meta["creationTimestamp"].(string)
	return s
}

// setDiscovered stores (or removes) a discovered object and the nested
// discoveries inside it.
func (e *Engine) setDiscovered(st *State, r *taskconfig.Resource, obj transport.Object) {
	if obj == nil {
		delete(st.Resources, r.Name)
		for _, nd := range r.NestedDiscoveries {
			delete(st.Resources, nd.Name)
		}
		return
	}
	st.Resources[r.Name] = obj
	data := e.templateData(st, nil)
	for _, nd := range r.NestedDiscoveries {
		if sub := e.nested(obj, nd.Discovery, data); sub != nil {
			st.Resources[nd.Name] = sub
		} else {
			delete(st.Resources, nd.Name)
		}
	}
}

// renderManifest renders the manifest in any of its three forms.
func (e *Engine) renderManifest(r *taskconfig.Resource, data map[string]any) (transport.Object, error) {
	m := r.Manifest
	var text string
	switch {
	case m.Inline != nil:
		out, err := e.renderTree(jsonvalue.Copy(m.Inline), data)
		if err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
		obj, _ := out.(map[string]any)
		return obj, nil
	case m.Ref != "":
		content, ok := e.refs[m.Ref]
		if !ok {
			return nil, fmt.Errorf("manifest.ref %s was not loaded", m.Ref)
		}
		text = content
	default:
		text = m.Template
	}
	rendered, err := e.render(text, data)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(rendered), &obj); err != nil {
		return nil, fmt.Errorf("the rendered manifest is not valid YAML: %w", err)
	}
	if obj == nil {
		return nil, errors.New("the rendered manifest is empty")
	}
	return taskconfig.NormalizedCopy(obj).(map[string]any), nil
}

// renderTree renders every string (keys included) of an inline manifest.
func (e *Engine) renderTree(node any, data map[string]any) (any, error) {
	switch x := node.(type) {
	case string:
		return e.render(x, data)
	case []any:
		for i, v := range x {
			out, err := e.renderTree(v, data)
			if err != nil {
				return nil, err
			}
			x[i] = out
		}
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			rk, err := e.render(k, data)
			if err != nil {
				return nil, err
			}
			rv, err := e.renderTree(v, data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[rk] = rv
		}
		return out, nil
	}
	return node, nil
}
