// Package statusreport holds the contract's rules for accepting an adapter's
// status report ("Adapter status reports", rules 1-4), as pure functions: what
// makes a report invalid, whether it is stored, discarded or aggregated, and
// how it merges with the adapter's previous report.
package statusreport

import (
	"fmt"
	"time"
	"unicode"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Clock-skew window for observed_time: a report from further in the future
// or the past is a clock or replay bug in the adapter.
const (
	MaxFutureSkew = 5 * time.Minute
	MaxPastSkew   = 30 * time.Minute
)

// Bounds of one report: every field is stored and served back, so none may
// grow without limit.
const (
	MaxAdapterLength   = resource.MaxAdapterNameLength
	MaxConditions      = 32
	MaxConditionType   = 128
	MaxConditionReason = 256
	MaxMessageLength   = 4096
)

// MandatoryConditions must be present in every report.
var MandatoryConditions = []string{resource.ConditionAvailable, resource.ConditionApplied, resource.ConditionHealth}

// Validate applies rule 1 and returns every violation at once.
func Validate(r *resource.StatusReport, now time.Time) []problem.FieldError {
	var errs []problem.FieldError
	add := func(field string, value any, constraint, msg string) {
		errs = append(errs, problem.FieldError{Field: field, Value: value, Constraint: constraint, Message: msg})
	}
	switch {
	case r.Adapter == "":
		add("adapter", nil, "required", "adapter is required and must be a non-empty string")
	case len(r.Adapter) > MaxAdapterLength:
		add("adapter", clip(r.Adapter), fmt.Sprintf("maxLength=%d", MaxAdapterLength), fmt.Sprintf("adapter must be at most %d characters", MaxAdapterLength))
	case !printable(r.Adapter):
		add("adapter", r.Adapter, "printable", "adapter must be printable characters without spaces")
	}
	if r.ObservedGeneration < 1 {
		add("observed_generation", r.ObservedGeneration, "minimum=1", "observed_generation is required and must be an integer >= 1")
	}
	switch {
	case r.ObservedTime.IsZero():
		add("observed_time", nil, "required", "observed_time is required (RFC 3339 date-time)")
	case r.ObservedTime.After(now.Add(MaxFutureSkew)):
		add("observed_time", r.ObservedTime.Format(time.RFC3339), "notAfter=now+5m",
			fmt.Sprintf("observed_time is %s in the future; more than %s means the adapter's clock is wrong", r.ObservedTime.Sub(now).Round(time.Second), MaxFutureSkew))
	case r.ObservedTime.Before(now.Add(-MaxPastSkew)):
		add("observed_time", r.ObservedTime.Format(time.RFC3339), "notBefore=now-30m",
			fmt.Sprintf("observed_time is %s in the past; more than %s means a clock or replay bug in the adapter", now.Sub(r.ObservedTime).Round(time.Second), MaxPastSkew))
	}
	if r.Conditions == nil {
		add("conditions", nil, "required", "conditions is required and must include Available, Applied and Health")
	}
	if len(r.Conditions) > MaxConditions {
		add("conditions", len(r.Conditions), fmt.Sprintf("maxItems=%d", MaxConditions),
			fmt.Sprintf("a report holds at most %d conditions (got %d)", MaxConditions, len(r.Conditions)))
		return errs // each of thousands of conditions would add its own errors
	}
	seen := map[string]bool{}
	for i, c := range r.Conditions {
		field := fmt.Sprintf("conditions[%d]", i)
		tooLong := func(name, v string, limit int) bool {
			if len(v) <= limit {
				return false
			}
			add(field+"."+name, clip(v), fmt.Sprintf("maxLength=%d", limit), fmt.Sprintf("%s must be at most %d characters (got %d)", name, limit, len(v)))
			return true
		}
		tooLong("reason", c.Reason, MaxConditionReason)
		tooLong("message", c.Message, MaxMessageLength)
		if tooLong("type", c.Type, MaxConditionType) {
			continue
		}
		switch {
		case c.Type == "":
			add(field+".type", nil, "required", "type is required and must be non-empty")
		case !printable(c.Type):
			add(field+".type", c.Type, "printable", "type must be printable characters without spaces")
		case seen[c.Type]:
			add(field+".type", c.Type, "unique", fmt.Sprintf("condition type %q appears more than once", c.Type))
		}
		seen[c.Type] = true
		if !c.Status.Valid() {
			add(field+".status", c.Status, "enum=True,False,Unknown", "status must be one of True, False, Unknown")
		}
	}
	if r.Conditions != nil {
		for _, t := range MandatoryConditions {
			if !seen[t] {
				add("conditions", t, "contains="+t, fmt.Sprintf("the %s condition is mandatory", t))
			}
		}
	}
	if !isObjectOrAbsent(r.Metadata) {
		add("metadata", nil, "type=object", "metadata must be a JSON object")
	}
	if !isObjectOrAbsent(r.Data) {
		add("data", nil, "type=object", "data must be a JSON object")
	}
	return errs
}

// printable reports whether s is graphic characters only: no spaces or
// control characters (a NUL or a newline in a name breaks logs and labels).
func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// clip shortens a value echoed in an error.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

func isObjectOrAbsent(raw []byte) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		case 'n': // null
			return true
		default:
			return false
		}
	}
	return true
}

// Outcome is what happens to a valid report.
type Outcome int

const (
	// Discard: the report is dropped; the API answers 204.
	Discard Outcome = iota
	// StoreOnly: stored (201) but resource conditions are untouched.
	StoreOnly
	// Upsert: stored (201) and aggregated.
	Upsert
)

// Decide applies rules 2 and 3. existing is the adapter's stored report, nil
// when it has none. The returned text says why a report was discarded.
func Decide(r *resource.StatusReport, resourceGeneration int64, existing *resource.AdapterStatus) (Outcome, string) {
	if r.ObservedGeneration > resourceGeneration {
		return Discard, fmt.Sprintf("observed_generation %d is ahead of the resource's generation %d", r.ObservedGeneration, resourceGeneration)
	}
	if existing != nil && r.ObservedGeneration < existing.ObservedGeneration {
		return Discard, fmt.Sprintf("observed_generation %d is older than this adapter's last report (%d)", r.ObservedGeneration, existing.ObservedGeneration)
	}
	if availableStatus(r) == resource.StatusUnknown {
		if existing != nil {
			return Discard, "Available=Unknown after a previous report: in progress, nothing to change"
		}
		return StoreOnly, ""
	}
	return Upsert, ""
}

func availableStatus(r *resource.StatusReport) resource.ConditionStatus {
	for _, c := range r.Conditions {
		if c.Type == resource.ConditionAvailable {
			return c.Status
		}
	}
	return ""
}

// Merge builds the stored status from a report (rule 4): created_time is the
// first report, last_report_time every report, and each condition keeps its
// last_transition_time while its status does not change.
func Merge(r *resource.StatusReport, existing *resource.AdapterStatus, now time.Time) resource.AdapterStatus {
	st := resource.AdapterStatus{
		Adapter:            r.Adapter,
		ObservedGeneration: r.ObservedGeneration,
		ObservedTime:       r.ObservedTime,
		Metadata:           r.Metadata,
		Data:               r.Data,
		CreatedTime:        now,
		LastReportTime:     now,
		Conditions:         make([]resource.AdapterCondition, 0, len(r.Conditions)),
	}
	previous := map[string]resource.AdapterCondition{}
	if existing != nil {
		st.CreatedTime = existing.CreatedTime
		for _, c := range existing.Conditions {
			previous[c.Type] = c
		}
	}
	for _, c := range r.Conditions {
		transition := now
		if p, ok := previous[c.Type]; ok && p.Status == c.Status {
			transition = p.LastTransitionTime
		}
		st.Conditions = append(st.Conditions, resource.AdapterCondition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: transition,
		})
	}
	return st
}
