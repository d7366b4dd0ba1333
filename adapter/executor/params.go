package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/fieldpath"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	"github.com/hyperfleet/hyperfleet/internal/jsonvalue"
	"github.com/hyperfleet/hyperfleet/phase"
)

// errGone marks a 404 from the API for the resource being reconciled.
var errGone = errors.New("the resource no longer exists")

// errNotSent marks api_call failures that happened before any request left
// (a template that does not render, no client): retrying cannot help.
var errNotSent = errors.New("request not sent")

// params resolves every param in order; a failure stops the phase.
func (e *Engine) params(ctx context.Context, st *State) {
	tr := &st.Trace.Params
	tr.Outcome = phase.Success
	for i := range e.task.Params {
		p := &e.task.Params[i]
		step := ParamStep{Name: p.Name, Source: describeSource(p.Source)}
		value, found, call, err := e.resolveParam(ctx, st, p)
		step.Call = call
		if errors.Is(err, errGone) {
			step.Error = err.Error()
			tr.Steps = append(tr.Steps, step)
			e.gone(st, call)
			tr.Outcome, tr.Reason = phase.Skipped, st.Meta.SkipReason
			return
		}
		if err == nil && !found {
			value = nil
			switch {
			case p.Default != nil:
				value = taskconfig.NormalizedCopy(p.Default)
			case p.Required:
				err = fmt.Errorf("required param %q: %s has no value", p.Name, step.Source)
			}
		}
		if err == nil && value != nil && p.Type != "" {
			converted, cerr := taskconfig.Convert(value, p.Type)
			switch {
			case cerr == nil:
				value = converted
			case p.Required:
				err = fmt.Errorf("param %q: %v", p.Name, cerr)
			default:
				step.Warning = fmt.Sprintf("%v; using the default", cerr)
				value = defaultOf(p)
			}
		}
		if err != nil && !p.Required && p.Source.Expression != "" {
			// An optional derived value that cannot be computed falls back
			// to its default, like a failed conversion.
			step.Warning = err.Error() + "; using the default"
			value, err = defaultOf(p), nil
		}
		if err != nil {
			step.Error = err.Error()
			tr.Steps = append(tr.Steps, step)
			st.Meta.fail(StepError{Phase: phase.Params, Step: p.Name, Message: err.Error()})
			tr.Outcome, tr.Reason = phase.Failed, err.Error()
			return
		}
		step.Value = value
		st.Vars[p.Name] = value
		tr.Steps = append(tr.Steps, step)
	}
}

func defaultOf(p *taskconfig.Param) any {
	if p.Default == nil {
		return nil
	}
	v := taskconfig.NormalizedCopy(p.Default)
	if p.Type != "" {
		if c, err := taskconfig.Convert(v, p.Type); err == nil {
			return c
		}
	}
	return v
}

func describeSource(s taskconfig.ParamSource) string {
	switch {
	case s.Path != "":
		return s.Path
	case s.APICall != nil:
		m := s.APICall.Method
		if m == "" {
			m = http.MethodGet
		}
		return "api_call " + strings.ToUpper(m) + " " + s.APICall.URL
	case s.Expression != "":
		return "expression"
	case s.File != nil:
		return "file " + s.File.Path
	}
	return ""
}

// resolveParam reads one param's raw value; found is false when the source
// has no value.
func (e *Engine) resolveParam(ctx context.Context, st *State, p *taskconfig.Param) (any, bool, *Call, error) {
	s := p.Source
	switch {
	case s.APICall != nil:
		body, call, err := e.callAPI(ctx, st, s.APICall, nil)
		if err != nil {
			return nil, false, call, err
		}
		return body, true, call, nil
	case s.Expression != "":
		v, err := e.evalCEL(ctx, s.Expression, st.celVars(e.name, e.version))
		return v, err == nil && v != nil, nil, err
	case s.File != nil:
		raw, err := e.opts.ReadFile(s.File.Path)
		if err != nil {
			return nil, false, nil, fmt.Errorf("read %s: %w", s.File.Path, err)
		}
		v := string(raw)
		if s.File.Trim == nil || *s.File.Trim {
			v = strings.TrimSpace(v)
		}
		return v, true, nil, nil
	}
	head, rest, _ := strings.Cut(s.Path, ".")
	switch head {
	case "event":
		v, found, err := fieldpath.Get(st.EventView, rest)
		return v, found && v != nil, nil, err
	case "env":
		v, ok := e.opts.LookupEnv(rest)
		return v, ok && v != "", nil, nil
	case "secret", "configmap":
		v, err := e.clusterValue(ctx, head, rest)
		return v, err == nil && v != nil, nil, err
	}
	base, ok := st.Vars[head]
	if !ok {
		return nil, false, nil, nil
	}
	if rest == "" {
		return base, base != nil, nil, nil
	}
	v, found, err := fieldpath.Get(base, rest)
	return v, found && v != nil, nil, err
}

// clusterValue reads secret.<ns>.<name>.<key> or configmap.<ns>.<name>.<key>.
func (e *Engine) clusterValue(ctx context.Context, kind, path string) (any, error) {
	parts := strings.SplitN(path, ".", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("%s.%s: expected %s.<namespace>.<name>.<key>", kind, path, kind)
	}
	t, ok := e.opts.Transports["kubernetes"]
	if !ok {
		return nil, fmt.Errorf("%s.%s: no Kubernetes client is configured to read it", kind, path)
	}
	k := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[kind]
	obj, err := t.Get(ctx, "", transport.Ref{APIVersion: "v1", Kind: k, Namespace: parts[0], Name: parts[1]})
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("%s %s/%s not found", k, parts[0], parts[1])
	}
	if data, ok := obj["data"].(map[string]any); ok {
		if v, ok := data[parts[2]].(string); ok {
			if kind == "secret" {
				dec, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return nil, fmt.Errorf("secret %s/%s key %s is not base64: %w", parts[0], parts[1], parts[2], err)
				}
				return string(dec), nil
			}
			return v, nil
		}
	}
	if sd, ok := obj["stringData"].(map[string]any); ok {
		if v, ok := sd[parts[2]].(string); ok {
			return v, nil
		}
	}
	return nil, nil
}

// callAPI renders and performs an api_call and decodes its JSON response.
// A 404 for the resource being reconciled is errGone.
func (e *Engine) callAPI(ctx context.Context, st *State, c *taskconfig.APICall, extra map[string]any) (any, *Call, error) {
	data := e.templateData(st, extra)
	url, err := e.render(c.URL, data)
	if err != nil {
		return nil, nil, fmt.Errorf("url: %w (%w)", err, errNotSent)
	}
	req := apiclient.Request{Method: c.Method, URL: url, Endpoint: apiclient.EndpointLabel(c.URL), Timeout: c.Timeout.Duration, RetryBackoff: c.RetryBackoff}
	if c.RetryAttempts != nil {
		req.RetryAttempts = *c.RetryAttempts
	}
	for _, h := range c.Headers {
		v, err := e.render(h.Value, data)
		if err != nil {
			return nil, nil, fmt.Errorf("header %s: %w (%w)", h.Name, err, errNotSent)
		}
		req.Headers = append(req.Headers, [2]string{h.Name, v})
	}
	call := &Call{Method: strings.ToUpper(c.Method), URL: url}
	if call.Method == "" {
		call.Method = http.MethodGet
	}
	if c.Body != "" {
		body, err := e.render(c.Body, data)
		if err != nil {
			return nil, call, fmt.Errorf("body: %w (%w)", err, errNotSent)
		}
		req.Body = []byte(body)
		if v, err := jsonvalue.Decode(req.Body); err == nil {
			call.RequestBody = v
		} else {
			call.RequestBody = body
		}
	}
	if e.opts.API == nil {
		err := fmt.Errorf("no HyperFleet API client is configured (%w)", errNotSent)
		call.Error = err.Error()
		return nil, call, err
	}
	resp, err := e.opts.API.Do(ctx, req)
	if err != nil {
		call.Error = err.Error()
		return nil, call, err
	}
	call.URL, call.StatusCode, call.Attempts = resp.URL, resp.StatusCode, resp.Attempts
	var body any
	if len(strings.TrimSpace(string(resp.Body))) > 0 {
		if v, err := jsonvalue.Decode(resp.Body); err == nil {
			body = v
		} else {
			body = string(resp.Body)
		}
	}
	call.ResponseBody = body
	if resp.StatusCode == http.StatusNotFound && call.Method == http.MethodGet {
		return nil, call, errGone
	}
	if !resp.OK() {
		err := fmt.Errorf("%s %s returned HTTP %d: %s", call.Method, resp.URL, resp.StatusCode, snippet(resp.Body))
		call.Error = err.Error()
		return body, call, err
	}
	return body, call, nil
}

// gone ends the run cleanly: the resource was removed from the API.
func (e *Engine) gone(st *State, call *Call) {
	st.Gone = true
	reason := "the resource no longer exists in the HyperFleet API"
	if call != nil {
		reason = fmt.Sprintf("%s %s returned 404: %s", call.Method, call.URL, reason)
	}
	st.Meta.skip(reason)
	e.logFor(st).Info().Str("reason", reason).Msg("resource gone; nothing to reconcile")
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
