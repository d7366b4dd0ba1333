package resource

import (
	"encoding/json"
	"time"
)

// AdapterCondition is one condition inside an adapter's status report.
type AdapterCondition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
	LastTransitionTime time.Time       `json:"last_transition_time"`
}

// AdapterStatus is the stored latest report of one adapter for one resource.
type AdapterStatus struct {
	Adapter            string             `json:"adapter"`
	ObservedGeneration int64              `json:"observed_generation"`
	ObservedTime       time.Time          `json:"observed_time"`
	Conditions         []AdapterCondition `json:"conditions"`
	Metadata           json.RawMessage    `json:"metadata,omitempty"`
	Data               json.RawMessage    `json:"data,omitempty"`
	CreatedTime        time.Time          `json:"created_time"`
	LastReportTime     time.Time          `json:"last_report_time"`
}

// ConditionStatus returns the status of the named condition, or "" when the
// report does not carry it.
func (s *AdapterStatus) ConditionStatus(conditionType string) ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == conditionType {
			return c.Status
		}
	}
	return ""
}

// ReportCondition is a condition as an adapter sends it (no timestamps: the
// API manages them).
type ReportCondition struct {
	Type    string          `json:"type"`
	Status  ConditionStatus `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
}

// StatusReport is the body of PUT .../statuses (AdapterStatusCreateRequest).
type StatusReport struct {
	Adapter            string            `json:"adapter"`
	ObservedGeneration int64             `json:"observed_generation"`
	ObservedTime       time.Time         `json:"observed_time"`
	Conditions         []ReportCondition `json:"conditions"`
	Metadata           json.RawMessage   `json:"metadata,omitempty"`
	Data               json.RawMessage   `json:"data,omitempty"`
}

// Event is what a reconcile hands to an adapter: the seed's anemic event, so
// task configs written for upstream HyperFleet read the same fields.
type Event struct {
	ID              string          `json:"id"`
	Kind            string          `json:"kind"`
	Href            string          `json:"href"`
	Generation      int64           `json:"generation"`
	OwnerReferences *OwnerReference `json:"owner_references,omitempty"`
}
