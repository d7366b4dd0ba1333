// Package aggregation turns the adapters' status reports into a resource's
// conditions. Everything here is a pure function of its input so every rule of
// the contract ("Aggregated resource conditions", "Deletion") can be checked
// by table-driven tests without a database.
package aggregation

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/hyperfleet/hyperfleet/resource"
)

// Reasons of the aggregated conditions. Clients may switch on them.
const (
	ReasonAwaitingAdapters     = "AwaitingAdapters"
	ReasonNoAdaptersRegistered = "NoAdaptersRegistered"
	ReasonResourceReady        = "ResourceReady"
	ReasonAdaptersReconciling  = "AdaptersReconciling"
	ReasonAdaptersUnavailable  = "AdaptersUnavailable"
	ReasonResourceAvailable    = "ResourceAvailable"
	ReasonAwaitingFinalization = "AwaitingFinalization"
	ReasonAwaitingChildren     = "AwaitingChildDeletion"
	ReasonFinalized            = "Finalized"
	ReasonAdapterAvailable     = "AdapterAvailable"
	ReasonAdapterUnavailable   = "AdapterUnavailable"

	MessageAwaitingAdapters = "Waiting for adapters to report status"
)

// Input is everything aggregation depends on.
type Input struct {
	Kind       string
	Generation int64
	Deleting   bool
	// Children is the number of node pools still stored under a Cluster
	// (soft-deleted ones included: they are not gone yet). Only a deleting
	// resource reads it; callers may leave it 0 otherwise.
	Children int
	// Registered names the adapters whose reports decide readiness, in the
	// order their conditions are listed.
	Registered []string
	// Statuses are all stored reports for the resource, registered or not.
	Statuses []resource.AdapterStatus
	// Previous are the conditions stored before this change: the sticky
	// Available rule and the transition times depend on them.
	Previous []resource.Condition
	Now      time.Time
	// Rules are the outcomes of the kind's condition rules (kinds file
	// conditions:), evaluated by the caller over the same statuses; each
	// becomes a condition of its own after the fixed ones.
	Rules []RuleOutcome
}

// RuleOutcome is the result of one condition rule.
type RuleOutcome struct {
	Type    string
	Status  resource.ConditionStatus
	Reason  string
	Message string
}

// Result is the outcome of one aggregation.
type Result struct {
	Conditions []resource.Condition
	// Removable is true when deletion has completed: the resource is being
	// deleted, has no children left and every registered adapter has
	// reported Finalized=True at the current generation.
	Removable bool
}

// Compute applies the contract's aggregation rules.
func Compute(in Input) Result {
	reported := eligibleReports(in.Registered, in.Statuses)
	updated := oldestReport(in.Registered, reported, in.Now)

	ready := readyCondition(in, reported)
	available := availableCondition(in, reported)

	out := make([]resource.Condition, 0, 4+len(in.Registered)+len(in.Rules))
	out = append(out,
		stamp(ready, in.Previous, updated, in.Now),
		stamp(renamed(ready, resource.ConditionReconciled), in.Previous, updated, in.Now),
		stamp(available, in.Previous, updated, in.Now),
		stamp(renamed(available, resource.ConditionLastKnownReconciled), in.Previous, updated, in.Now),
	)
	for _, name := range in.Registered {
		c, when := adapterCondition(name, reported[name], in.Now)
		out = append(out, stamp(c, in.Previous, when, in.Now))
	}
	for _, r := range in.Rules {
		c := resource.Condition{Type: r.Type, Status: r.Status, Reason: r.Reason, Message: r.Message, ObservedGeneration: in.Generation}
		out = append(out, stamp(c, in.Previous, updated, in.Now))
	}
	return Result{Conditions: out, Removable: removable(in, reported)}
}

// Initial returns the conditions of a newly created resource.
func Initial(kind string, registered []string, now time.Time) []resource.Condition {
	return Compute(Input{Kind: kind, Generation: 1, Registered: registered, Now: now}).Conditions
}

// ConditionTypeForAdapter names the per-adapter condition:
// "landing-zone" -> "LandingZoneSuccessful".
func ConditionTypeForAdapter(adapter string) string {
	var b strings.Builder
	upperNext := true
	for _, r := range adapter {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upperNext = true
			continue
		}
		if upperNext {
			r = unicode.ToUpper(r)
			upperNext = false
		}
		b.WriteRune(r)
	}
	return b.String() + "Successful"
}

// eligibleReports keeps, per registered adapter, the stored report that may
// take part in aggregation. A report whose Available is Unknown (or absent)
// is "in progress" and must never change resource-level conditions, so it
// counts as not reported.
func eligibleReports(registered []string, statuses []resource.AdapterStatus) map[string]*resource.AdapterStatus {
	isRegistered := make(map[string]bool, len(registered))
	for _, name := range registered {
		isRegistered[name] = true
	}
	out := make(map[string]*resource.AdapterStatus, len(registered))
	for i := range statuses {
		st := &statuses[i]
		if !isRegistered[st.Adapter] {
			continue
		}
		switch st.ConditionStatus(resource.ConditionAvailable) {
		case resource.StatusTrue, resource.StatusFalse:
			out[st.Adapter] = st
		case resource.StatusUnknown:
			// in progress: not a report that counts
		default:
			// no Available condition: neither
		}
	}
	return out
}

// oldestReport is the last_updated_time of the aggregated conditions: every
// registered adapter has reported at least this recently, so a stale value
// means an adapter stopped reporting (liveness, not stability).
func oldestReport(registered []string, reported map[string]*resource.AdapterStatus, now time.Time) time.Time {
	var oldest time.Time
	for _, name := range registered {
		st, ok := reported[name]
		if !ok {
			continue
		}
		if oldest.IsZero() || st.LastReportTime.Before(oldest) {
			oldest = st.LastReportTime
		}
	}
	if oldest.IsZero() {
		return now
	}
	return oldest
}

func readyCondition(in Input, reported map[string]*resource.AdapterStatus) resource.Condition {
	c := resource.Condition{Type: resource.ConditionReady, Status: resource.StatusFalse, ObservedGeneration: in.Generation}
	if len(in.Registered) == 0 {
		return noAdapters(c, in.Kind)
	}
	if in.Deleting {
		return deletionReady(c, in, reported)
	}
	if len(reported) == 0 {
		c.ObservedGeneration = 0
		c.Reason, c.Message = ReasonAwaitingAdapters, MessageAwaitingAdapters
		return c
	}
	var behind, unavailable []string
	for _, name := range in.Registered {
		st, ok := reported[name]
		switch {
		case !ok || st.ObservedGeneration != in.Generation:
			behind = append(behind, name)
		case st.ConditionStatus(resource.ConditionAvailable) != resource.StatusTrue:
			unavailable = append(unavailable, name)
		}
	}
	switch {
	case len(unavailable) > 0:
		c.Reason = ReasonAdaptersUnavailable
		c.Message = fmt.Sprintf("Adapters report Available=False at generation %d: %s", in.Generation, strings.Join(unavailable, ", "))
		if len(behind) > 0 {
			c.Message += fmt.Sprintf("; not yet at generation %d: %s", in.Generation, strings.Join(behind, ", "))
		}
	case len(behind) > 0:
		c.Reason = ReasonAdaptersReconciling
		c.Message = fmt.Sprintf("Waiting for adapters to report generation %d: %s", in.Generation, strings.Join(behind, ", "))
	default:
		c.Status = resource.StatusTrue
		c.Reason = ReasonResourceReady
		c.Message = "All adapters report ready at current generation"
	}
	return c
}

func deletionReady(c resource.Condition, in Input, reported map[string]*resource.AdapterStatus) resource.Condition {
	pending := notFinalized(in, reported)
	switch {
	case in.Children > 0:
		c.Reason = ReasonAwaitingChildren
		c.Message = fmt.Sprintf("Deleting: %d node pool(s) still being deleted", in.Children)
		if len(pending) > 0 {
			c.Message += "; not yet finalized: " + strings.Join(pending, ", ")
		}
	case len(pending) > 0:
		c.Reason = ReasonAwaitingFinalization
		c.Message = fmt.Sprintf("Deleting: waiting for adapters to report Finalized=True at generation %d: %s", in.Generation, strings.Join(pending, ", "))
	default:
		c.Status = resource.StatusTrue
		c.Reason = ReasonFinalized
		c.Message = "All adapters finalized the deletion"
	}
	return c
}

func notFinalized(in Input, reported map[string]*resource.AdapterStatus) []string {
	var pending []string
	for _, name := range in.Registered {
		st, ok := reported[name]
		if !ok || st.ObservedGeneration != in.Generation || st.ConditionStatus(resource.ConditionFinalized) != resource.StatusTrue {
			pending = append(pending, name)
		}
	}
	return pending
}

func removable(in Input, reported map[string]*resource.AdapterStatus) bool {
	return in.Deleting && in.Children == 0 && len(notFinalized(in, reported)) == 0
}

// availableCondition is "running at some known good configuration":
// True or False only when all registered adapters agree on one generation,
// otherwise it keeps its previous value (the sticky rule of seed 001).
func availableCondition(in Input, reported map[string]*resource.AdapterStatus) resource.Condition {
	c := resource.Condition{Type: resource.ConditionAvailable, Status: resource.StatusFalse}
	if len(in.Registered) == 0 {
		return noAdapters(c, in.Kind)
	}
	previous, hasPrevious := resource.FindCondition(in.Previous, resource.ConditionAvailable)
	hasPrevious = hasPrevious && previous.Reason != ReasonAwaitingAdapters && previous.Reason != ReasonNoAdaptersRegistered

	generations := map[int64]bool{}
	var unavailable []string
	for _, name := range in.Registered {
		st, ok := reported[name]
		if !ok {
			if hasPrevious {
				return previous
			}
			c.Reason, c.Message = ReasonAwaitingAdapters, MessageAwaitingAdapters
			return c
		}
		generations[st.ObservedGeneration] = true
		if st.ConditionStatus(resource.ConditionAvailable) != resource.StatusTrue {
			unavailable = append(unavailable, name)
		}
	}
	if len(generations) > 1 {
		if hasPrevious {
			return previous
		}
		c.Reason, c.Message = ReasonAwaitingAdapters, MessageAwaitingAdapters
		return c
	}
	for g := range generations {
		c.ObservedGeneration = g
	}
	if len(unavailable) > 0 {
		c.Reason = ReasonAdaptersUnavailable
		c.Message = fmt.Sprintf("Adapters report Available=False at generation %d: %s", c.ObservedGeneration, strings.Join(unavailable, ", "))
		return c
	}
	c.Status = resource.StatusTrue
	c.Reason = ReasonResourceAvailable
	c.Message = fmt.Sprintf("All adapters report Available=True at generation %d", c.ObservedGeneration)
	return c
}

func adapterCondition(name string, st *resource.AdapterStatus, now time.Time) (resource.Condition, time.Time) {
	c := resource.Condition{Type: ConditionTypeForAdapter(name), Status: resource.StatusFalse}
	if st == nil {
		c.Reason = ReasonAwaitingAdapters
		c.Message = fmt.Sprintf("Waiting for adapter %s to report status", name)
		return c, now
	}
	c.ObservedGeneration = st.ObservedGeneration
	for _, ac := range st.Conditions {
		if ac.Type != resource.ConditionAvailable {
			continue
		}
		c.Status = ac.Status
		c.Reason, c.Message = ac.Reason, ac.Message
	}
	if c.Reason == "" {
		c.Reason = ReasonAdapterUnavailable
		if c.Status == resource.StatusTrue {
			c.Reason = ReasonAdapterAvailable
		}
	}
	return c, st.LastReportTime
}

func noAdapters(c resource.Condition, kind string) resource.Condition {
	c.ObservedGeneration = 0
	c.Reason = ReasonNoAdaptersRegistered
	c.Message = fmt.Sprintf("No adapters are registered for %s; set %s", kind, RegistrationVariable(kind))
	return c
}

// RegistrationVariable names the environment variable that registers
// adapters for a kind.
func RegistrationVariable(kind string) string { return resource.RegistrationVariable(kind) }

func renamed(c resource.Condition, conditionType string) resource.Condition {
	c.Type = conditionType
	return c
}

// stamp carries over the API-managed timestamps: created_time is kept,
// last_transition_time moves only when the status changes and
// last_updated_time is when the inputs were last reported.
func stamp(next resource.Condition, previous []resource.Condition, updated, now time.Time) resource.Condition {
	prev, ok := resource.FindCondition(previous, next.Type)
	next.LastUpdatedTime = updated
	if !ok {
		next.CreatedTime = now
		next.LastTransitionTime = now
		return next
	}
	next.CreatedTime = prev.CreatedTime
	next.LastTransitionTime = prev.LastTransitionTime
	if prev.Status != next.Status {
		next.LastTransitionTime = now
	}
	return next
}

// SortStatuses orders reports by adapter name, the order the API lists them.
func SortStatuses(statuses []resource.AdapterStatus) {
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].Adapter < statuses[j].Adapter })
}

// BecameReconciled reports whether an aggregation turned a resource
// Reconciled: it was not (or had no condition yet), or it was at an older
// generation. Its waiting children are told then, because what they wait
// for (its spec, its adapters' reports) has just settled; re-reading the
// same Reconciled generation tells nobody.
func BecameReconciled(previous, next []resource.Condition) bool {
	after, ok := resource.FindCondition(next, resource.ConditionReconciled)
	if !ok || after.Status != resource.StatusTrue {
		return false
	}
	before, ok := resource.FindCondition(previous, resource.ConditionReconciled)
	return !ok || before.Status != resource.StatusTrue || before.ObservedGeneration < after.ObservedGeneration
}
