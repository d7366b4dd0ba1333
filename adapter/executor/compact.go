package executor

// Compact drops what only a human reading a dry-run needs (values, HTTP
// bodies, rendered manifests and payloads in the trace, which repeat what
// Vars holds) and what no expression should read (metadata.managedFields
// of discovered objects), so a State passed between workflow activities,
// and stored in the workflow's history, stays small. Everything the later
// phases evaluate is kept: params, captures, precondition responses and
// discovered objects; the trace keeps its steps, outcomes and errors.
func (s *State) Compact() {
	for i := range s.Trace.Params.Steps {
		s.Trace.Params.Steps[i].Value = nil
		compactCall(s.Trace.Params.Steps[i].Call)
	}
	for i := range s.Trace.Preconditions.Steps {
		step := &s.Trace.Preconditions.Steps[i]
		compactCall(step.Call)
		for j := range step.Captures {
			step.Captures[j].Value = nil
		}
		for j := range step.Conditions {
			step.Conditions[j].Actual = nil
		}
	}
	for i := range s.Trace.Resources.Steps {
		s.Trace.Resources.Steps[i].Manifest = nil
	}
	for i := range s.Trace.Post.Payloads {
		s.Trace.Post.Payloads[i].Payload = nil
	}
	for i := range s.Trace.Post.Actions {
		compactCall(s.Trace.Post.Actions[i].Call)
	}
	for _, obj := range s.Resources {
		dropManagedFields(obj)
	}
}

func compactCall(c *Call) {
	if c != nil {
		c.RequestBody, c.ResponseBody = nil, nil
	}
}

// dropManagedFields walks discovered objects, including nested ones
// (a ManifestWork's status carries the objects it applied).
func dropManagedFields(v any) {
	switch t := v.(type) {
	case map[string]any:
		if md, ok := t["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
		for _, child := range t {
			dropManagedFields(child)
		}
	case []any:
		for _, child := range t {
			dropManagedFields(child)
		}
	}
}
