package executor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/template"
	"github.com/hyperfleet/hyperfleet/phase"
)

// PostResult is what the post phase produced.
type PostResult struct {
	// Payloads by name (those whose when held).
	Payloads map[string]map[string]any
	// Reported is true when at least one post action ran successfully.
	Reported bool
	// Retryable is set when a failure may succeed later (the API was
	// unreachable or answered 5xx); a 4xx rejection is not.
	Retryable bool
}

// ErrPost wraps post-phase failures.
var ErrPost = errors.New("post phase failed")

// post builds the payloads and runs the post actions. It always runs; when
// the resource is gone it builds but reports nothing.
func (e *Engine) post(ctx context.Context, st *State) (*PostResult, error) {
	tr := &st.Trace.Post
	tr.Outcome = phase.Success
	res := &PostResult{Payloads: map[string]map[string]any{}}
	if e.task.Post == nil {
		return res, nil
	}
	pr := &postRun{st: st, res: res, celVars: st.celVars(e.name, e.version), extra: map[string]any{}}
	e.postPayloads(ctx, pr)
	e.postActions(ctx, pr)
	if pr.firstErr != nil {
		return res, fmt.Errorf("%w: %w", ErrPost, pr.firstErr)
	}
	return res, nil
}

// postRun is what the post phase's payloads hand to its actions.
type postRun struct {
	st       *State
	res      *PostResult
	celVars  map[string]any
	extra    map[string]any // built payloads, by name, for the actions' templates
	firstErr error
}

// fail marks the phase failed; the first error is the one reported.
func (pr *postRun) fail(err error) {
	pr.st.Trace.Post.Outcome = phase.Failed
	if pr.firstErr == nil {
		pr.firstErr = err
	}
}

// postPayloads builds each payload whose when holds.
func (e *Engine) postPayloads(ctx context.Context, pr *postRun) {
	tr := &pr.st.Trace.Post
	for i := range e.task.Post.Payloads {
		pl := &e.task.Post.Payloads[i]
		step := PayloadStep{Name: pl.Name}
		if pr.st.Gone {
			// Nothing will be reported, and the captures a payload reads
			// were never taken.
			tr.Payloads = append(tr.Payloads, step)
			continue
		}
		if pl.When != nil {
			ok, err := e.evalBool(ctx, pl.When.Expression, pr.celVars)
			if err != nil {
				step.Error = "when: " + err.Error()
				tr.Payloads = append(tr.Payloads, step)
				pr.fail(fmt.Errorf("payload %s: %s", pl.Name, step.Error))
				continue
			}
			if !ok {
				tr.Payloads = append(tr.Payloads, step)
				continue
			}
		}
		built, err := e.buildPayload(ctx, pr.st, pl, pr.celVars, pr.extra)
		if err != nil {
			step.Error = err.Error()
			tr.Payloads = append(tr.Payloads, step)
			pr.fail(fmt.Errorf("payload %s: %w", pl.Name, err))
			continue
		}
		step.Built, step.Payload = true, built
		pr.res.Payloads[pl.Name] = built
		pr.extra[pl.Name] = template.JSON{V: built}
		tr.Payloads = append(tr.Payloads, step)
	}
}

// postActions runs each post action whose when holds.
func (e *Engine) postActions(ctx context.Context, pr *postRun) {
	tr := &pr.st.Trace.Post
	for i := range e.task.Post.PostActions {
		pa := &e.task.Post.PostActions[i]
		step := ActionStep{Name: pa.Name}
		switch {
		case pr.st.Gone:
			step.Outcome, step.Message = ActionSkipped, "the resource no longer exists"
			tr.Actions = append(tr.Actions, step)
			continue
		case pa.When != nil:
			ok, err := e.evalBool(ctx, pa.When.Expression, pr.celVars)
			if err != nil {
				step.Outcome, step.Message = ActionFailed, "when: "+err.Error()
				tr.Actions = append(tr.Actions, step)
				pr.fail(fmt.Errorf("post action %s: %s", pa.Name, step.Message))
				continue
			}
			if !ok {
				step.Outcome, step.Message = ActionSkipped, "when is false"
				tr.Actions = append(tr.Actions, step)
				continue
			}
		}
		_, call, err := e.callAPI(ctx, pr.st, pa.APICall, pr.extra)
		step.Call = call
		if errors.Is(err, errGone) {
			err = nil // a GET post action on a removed resource: nothing to do
			step.Message = "404: the resource no longer exists"
		}
		if err != nil {
			step.Outcome, step.Message = ActionFailed, err.Error()
			tr.Actions = append(tr.Actions, step)
			if !errors.Is(err, errNotSent) && (call.StatusCode == 0 || call.StatusCode >= 500 || call.StatusCode == http.StatusTooManyRequests) {
				pr.res.Retryable = true
			}
			pr.fail(fmt.Errorf("post action %s: %w", pa.Name, err))
			continue
		}
		step.Outcome = ActionExecuted
		pr.res.Reported = true
		tr.Actions = append(tr.Actions, step)
	}
}

func (e *Engine) buildPayload(ctx context.Context, st *State, pl *taskconfig.Payload, celVars, extra map[string]any) (map[string]any, error) {
	build := pl.Build
	if build == nil {
		content, ok := e.refs[pl.BuildRef]
		if !ok {
			return nil, fmt.Errorf("build_ref %s was not loaded", pl.BuildRef)
		}
		if err := yaml.Unmarshal([]byte(content), &build); err != nil {
			return nil, fmt.Errorf("build_ref %s: %w", pl.BuildRef, err)
		}
	}
	data := e.templateData(st, extra)
	out, err := e.buildValue(ctx, "", taskconfig.NormalizedCopy(build), celVars, data)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

// buildValue evaluates one node of a payload: strings are templates,
// {expression} is CEL (keeping its type), {field, default} reads a path,
// anything else is built recursively.
func (e *Engine) buildValue(ctx context.Context, path string, node any, celVars, data map[string]any) (any, error) {
	switch x := node.(type) {
	case string:
		v, err := e.render(x, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pathOr(path), err)
		}
		return v, nil
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			v, err := e.buildValue(ctx, fmt.Sprintf("%s[%d]", path, i), el, celVars, data)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		switch kind, spec := taskconfig.ValueSpec(x); kind {
		case taskconfig.SpecExpression:
			v, err := e.evalCEL(ctx, fmt.Sprint(spec), celVars)
			if err != nil {
				if def, ok := x["default"]; ok {
					return def, nil
				}
				return nil, fmt.Errorf("%s: %w", pathOr(path), err)
			}
			if v == nil {
				if def, ok := x["default"]; ok {
					return def, nil
				}
			}
			return v, nil
		case taskconfig.SpecField:
			v, found, err := fieldpath.Get(celVars, fmt.Sprint(spec))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", pathOr(path), err)
			}
			if !found || v == nil {
				return x["default"], nil
			}
			return v, nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			v, err := e.buildValue(ctx, joinPath(path, k), x[k], celVars, data)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return node, nil
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func pathOr(p string) string {
	if p == "" {
		return "(payload)"
	}
	return p
}
