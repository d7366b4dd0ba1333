package executor

// Compact drops what only a human reading a dry-run needs (HTTP bodies and
// rendered manifests in the trace) and what no expression should read
// (metadata.managedFields of discovered objects), so a State passed between
// workflow activities stays small. Everything the later phases evaluate is
// kept: params, captures, precondition responses and discovered objects.
func (s *State) Compact() {
	for i := range s.Trace.Params.Steps {
		compactCall(s.Trace.Params.Steps[i].Call)
	}
	for i := range s.Trace.Preconditions.Steps {
		compactCall(s.Trace.Preconditions.Steps[i].Call)
	}
	for i := range s.Trace.Resources.Steps {
		s.Trace.Resources.Steps[i].Manifest = nil
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
