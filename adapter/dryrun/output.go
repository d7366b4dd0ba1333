package dryrun

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/phase"
)

// SchemaVersion names the JSON output's schema; it changes only when the
// shape does (docs/adapter-authoring.md documents it).
const SchemaVersion = "hyperfleet.io/dry-run/v1"

// jsonReport is the --dry-run-output json document.
type jsonReport struct {
	Schema     string         `json:"schema"`
	Adapter    string         `json:"adapter"`
	Event      map[string]any `json:"event"`
	EventType  string         `json:"event_type,omitempty"`
	Result     string         `json:"result"`
	Context    executor.Meta  `json:"adapter_context"`
	Phases     executor.Trace `json:"phases"`
	Discovered map[string]any `json:"discovered"`
	PostError  string         `json:"post_error,omitempty"`
	Unmocked   []string       `json:"unmocked_calls,omitempty"`
}

// WriteJSON writes the machine-readable trace.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{
		Schema: SchemaVersion, Adapter: r.Adapter, Event: r.Event, EventType: r.Type, Result: r.Result,
		Context: r.State.Meta, Phases: r.State.Trace, Discovered: r.State.Resources, PostError: r.PostErr, Unmocked: r.Unmocked,
	})
}

// WriteText writes the human trace; verbose adds rendered manifests, request
// and response bodies and the built payloads.
func (r *Report) WriteText(w io.Writer, verbose bool) {
	p := &printer{w: w}
	r.writeHeader(p)
	r.writeParams(p, verbose)
	r.writePreconditions(p, verbose)
	r.writeResources(p, verbose)
	r.writeDiscovered(p, verbose)
	r.writePost(p, verbose)
	r.writeOutcome(p)
}

func (r *Report) writeHeader(p *printer) {
	st := r.State
	p.line("Dry-Run Execution Trace")
	p.line("========================")
	ev := fmt.Sprintf("Event: id=%v kind=%v generation=%v", st.Event.ID, st.Event.Kind, st.Event.Generation)
	if r.Type != "" {
		ev += " type=" + r.Type
	}
	p.line("Adapter: %s", r.Adapter)
	p.line("%s", ev)
	p.line("")
}

func (r *Report) writeParams(p *printer, verbose bool) {
	tr := r.State.Trace
	p.phase("Phase 1: Parameter Extraction", tr.Params.Outcome, "")
	for _, s := range tr.Params.Steps {
		switch {
		case s.Error != "":
			p.line("  %s: ERROR %s", s.Name, s.Error)
		default:
			p.line("  %s = %s", s.Name, short(s.Value, 100))
		}
		if s.Warning != "" {
			p.line("    warning: %s", s.Warning)
		}
		p.call(s.Call, verbose)
	}
	p.reason(tr.Params.Reason, tr.Params.Outcome)
	p.line("")
}

func (r *Report) writePreconditions(p *printer, verbose bool) {
	tr := r.State.Trace
	outcome, suffix := tr.Preconditions.Outcome, ""
	switch outcome {
	case phase.Success:
		suffix = " (MET)"
	case phase.NotMet:
		outcome, suffix = phase.Success, " (NOT MET)"
	case phase.Failed, phase.Skipped:
		// Shown as they are.
	}
	p.phase("Phase 2: Preconditions", outcome, suffix)
	for i, s := range tr.Preconditions.Steps {
		p.step(i, len(tr.Preconditions.Steps), s.Name, string(s.Outcome))
		p.call(s.Call, verbose)
		for _, c := range s.Captures {
			p.line("    Captured: %s = %s", c.Name, short(c.Value, 100))
			if c.Warning != "" {
				p.line("      warning: %s", c.Warning)
			}
		}
		for _, c := range s.Conditions {
			mark := "ok"
			if !c.Result {
				mark = "FAILED"
			}
			p.line("    Condition: %s %s %s (actual %s) %s", c.Field, c.Operator, short(c.Value, 60), short(c.Actual, 60), mark)
		}
		if s.Expression != nil {
			p.line("    Expression: %s => %v", oneLine(s.Expression.Expression), s.Expression.Result)
		}
		if s.Message != "" {
			p.line("    %s", s.Message)
		}
	}
	p.reason(tr.Preconditions.Reason, tr.Preconditions.Outcome)
	p.line("")
}

func (r *Report) writeResources(p *printer, verbose bool) {
	tr := r.State.Trace
	p.phase("Phase 3: Resources", tr.Resources.Outcome, "")
	for i, s := range tr.Resources.Steps {
		p.step(i, len(tr.Resources.Steps), s.Name, string(s.Operation))
		target := ""
		if s.Target != "" {
			target = "  Target: " + s.Target
		}
		p.line("    Kind: %s  Namespace: %s  Name: %s%s", s.Kind, s.Namespace, s.Object, target)
		if s.Message != "" {
			p.line("    %s", s.Message)
		}
		if s.Error != "" {
			p.line("    Error: %s", s.Error)
		}
		if verbose && s.Manifest != nil {
			p.block("Manifest", s.Manifest)
		}
	}
	p.reason(tr.Resources.Reason, tr.Resources.Outcome)
	p.line("")
}

func (r *Report) writeDiscovered(p *printer, verbose bool) {
	st := r.State
	p.phase("Phase 3.5: Discovery Results", "", "")
	p.line("  (available as resources.* in payload expressions)")
	names := make([]string, 0, len(st.Resources))
	for n := range st.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		limit := 160
		if verbose {
			limit = 0
		}
		p.line("  %s: %s", n, short(st.Resources[n], limit))
	}
	if len(names) == 0 {
		p.line("  (none)")
	}
	p.line("")
}

func (r *Report) writePost(p *printer, verbose bool) {
	st := r.State
	tr := st.Trace
	p.phase("Phase 4: Post Actions", tr.Post.Outcome, "")
	for _, pl := range tr.Post.Payloads {
		switch {
		case pl.Error != "":
			p.line("  payload %s: ERROR %s", pl.Name, pl.Error)
		case !pl.Built && st.Gone:
			p.line("  payload %s: not built (the resource no longer exists)", pl.Name)
		case !pl.Built:
			p.line("  payload %s: not built (when is false)", pl.Name)
		default:
			p.line("  payload %s: %s", pl.Name, summarize(pl.Payload))
			if verbose {
				p.block("Payload", pl.Payload)
			}
		}
	}
	for i, a := range tr.Post.Actions {
		p.step(i, len(tr.Post.Actions), a.Name, string(a.Outcome))
		p.call(a.Call, verbose)
		if a.Message != "" {
			p.line("    %s", a.Message)
		}
	}
	p.line("")
}

// writeOutcome writes the adapter context the run ended with and the result.
func (r *Report) writeOutcome(p *printer) {
	st := r.State
	p.line("Adapter context: executionStatus=%s resourcesSkipped=%v", st.Meta.ExecutionStatus, st.Meta.ResourcesSkipped)
	if e := st.Meta.ExecutionError; e != nil {
		p.line("  executionError: phase=%s step=%s message=%s", e.Phase, e.Step, e.Message)
	}
	if st.Meta.SkipReason != "" {
		p.line("  skipReason: %s", st.Meta.SkipReason)
	}
	for _, u := range r.Unmocked {
		p.line("  unmocked call: %s (add a match to --dry-run-api-responses)", u)
	}
	if r.PostErr != "" {
		p.line("  post error: %s", r.PostErr)
	}
	p.line("Result: %s", r.Result)
}

type printer struct{ w io.Writer }

func (p *printer) line(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *printer) phase(title string, outcome phase.Outcome, suffix string) {
	if outcome == "" {
		p.line("%s", title)
		return
	}
	dots := 45 - len(title)
	if dots < 3 {
		dots = 3
	}
	p.line("%s %s %s%s", title, strings.Repeat(".", dots), outcome, suffix)
}

func (p *printer) step(i, n int, name, outcome string) {
	label := fmt.Sprintf("  [%d/%d] %s", i+1, n, name)
	pad := 42 - len(label)
	if pad < 1 {
		pad = 1
	}
	p.line("%s%s%s", label, strings.Repeat(" ", pad), outcome)
}

func (p *printer) reason(reason string, outcome phase.Outcome) {
	if reason != "" && outcome != phase.Success {
		p.line("  Reason: %s", reason)
	}
}

func (p *printer) call(c *executor.Call, verbose bool) {
	if c == nil {
		return
	}
	status := fmt.Sprint(c.StatusCode)
	if c.StatusCode == 0 {
		status = "no response"
	}
	p.line("    API Call: %s %s -> %s", c.Method, pathOf(c.URL), status)
	if c.Error != "" && c.StatusCode == 0 {
		p.line("      error: %s", c.Error)
	}
	if verbose {
		if c.RequestBody != nil {
			p.block("Request body", c.RequestBody)
		}
		if c.ResponseBody != nil {
			p.block("Response body", c.ResponseBody)
		}
	}
}

func (p *printer) block(title string, v any) {
	b, _ := json.MarshalIndent(v, "      ", "  ")
	p.line("    %s:\n      %s", title, b)
}

func pathOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
			return u[i+3+j:]
		}
	}
	return u
}

// summarize shows a status payload's conditions compactly.
func summarize(payload map[string]any) string {
	conds, ok := payload["conditions"].([]any)
	if !ok {
		return short(payload, 160)
	}
	var parts []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v", m["type"], m["status"]))
	}
	s := strings.Join(parts, " ")
	if g, ok := payload["observed_generation"]; ok {
		s += fmt.Sprintf(" observed_generation=%v", g)
	}
	return s
}

func short(v any, limit int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if limit > 0 && len(s) > limit {
		s = s[:limit] + "..."
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
