// Package resource holds the types that cross the HTTP boundary between the
// HyperFleet API and its clients (adapters, the reconciler, users): resources,
// their aggregated conditions, adapter status reports and the reconcile event.
// Both sides import it; it has no dependencies beyond the standard library.
package resource

import (
	"encoding/json"
	"time"
)

// Kinds of resources the API manages.
const (
	KindCluster  = "Cluster"
	KindNodePool = "NodePool"
)

// BasePath is the prefix of every versioned API route.
const BasePath = "/api/hyperfleet/v1"

// ConditionStatus is a condition's status. Adapter reports may use all
// three values; aggregated resource conditions are only ever True or
// False. A named type, so a switch over it is checked for every value.
type ConditionStatus string

// Condition status values.
const (
	StatusTrue    ConditionStatus = "True"
	StatusFalse   ConditionStatus = "False"
	StatusUnknown ConditionStatus = "Unknown"
)

// Valid reports whether s is one of the three condition statuses.
func (s ConditionStatus) Valid() bool {
	switch s {
	case StatusTrue, StatusFalse, StatusUnknown:
		return true
	}
	return false
}

// Condition types with a meaning fixed by the contract.
const (
	ConditionReady               = "Ready"
	ConditionReconciled          = "Reconciled"
	ConditionAvailable           = "Available"
	ConditionLastKnownReconciled = "LastKnownReconciled"
	ConditionApplied             = "Applied"
	ConditionHealth              = "Health"
	ConditionFinalized           = "Finalized"
)

// Condition is an aggregated, API-managed condition of a Cluster or NodePool.
type Condition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
	ObservedGeneration int64           `json:"observed_generation"`
	CreatedTime        time.Time       `json:"created_time"`
	LastUpdatedTime    time.Time       `json:"last_updated_time"`
	LastTransitionTime time.Time       `json:"last_transition_time"`
}

// OwnerReference points a NodePool at its Cluster.
type OwnerReference struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Href string `json:"href"`
}

// Link is one typed reference from a resource to another, such as a
// Version's link to its Channel.
type Link struct {
	RefType string `json:"ref_type"`
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Href    string `json:"href"`
}

// Status is the observed state of a resource, computed by the API.
type Status struct {
	Conditions []Condition `json:"conditions"`
}

// Resource is a Cluster or a NodePool as the API returns it.
type Resource struct {
	Kind            string          `json:"kind"`
	ID              string          `json:"id"`
	Href            string          `json:"href"`
	Name            string          `json:"name"`
	OwnerReferences *OwnerReference `json:"owner_references,omitempty"`
	// References are the typed links the kind declares (references: in the
	// kinds file); absent on kinds without any.
	References []Link            `json:"references,omitempty"`
	Generation int64             `json:"generation"`
	Spec       json.RawMessage   `json:"spec"`
	Labels     map[string]string `json:"labels"`
	// Tenancy is the tenancy the resource was created under (a child
	// inherits its parent's): one value per tenancy dimension, absent when
	// the API runs without a tenancy file.
	Tenancy     map[string]string `json:"tenancy,omitempty"`
	CreatedTime time.Time         `json:"created_time"`
	UpdatedTime time.Time         `json:"updated_time"`
	CreatedBy   string            `json:"created_by"`
	UpdatedBy   string            `json:"updated_by"`
	DeletedTime *time.Time        `json:"deleted_time,omitempty"`
	DeletedBy   string            `json:"deleted_by,omitempty"`
	Status      Status            `json:"status"`
}

// Condition returns the condition of the given type, if present.
func (r *Resource) Condition(conditionType string) (Condition, bool) {
	return FindCondition(r.Status.Conditions, conditionType)
}

// FindCondition returns the condition of the given type, if present.
func FindCondition(conditions []Condition, conditionType string) (Condition, bool) {
	for _, c := range conditions {
		if c.Type == conditionType {
			return c, true
		}
	}
	return Condition{}, false
}

// List is the envelope of every paginated list response.
type List[T any] struct {
	Kind  string `json:"kind"`
	Page  int    `json:"page"`
	Size  int    `json:"size"`
	Total int64  `json:"total"`
	// NextPageToken reads the next page (the pageToken parameter) when
	// more items follow; it stays before Items, which writeList relies on.
	NextPageToken string `json:"next_page_token,omitempty"`
	Items         []T    `json:"items"`
}

// ClusterHref and NodePoolHref build the canonical hrefs of the contract.
func ClusterHref(id string) string { return BasePath + "/clusters/" + id }

// NodePoolHref is the href of a node pool under its cluster.
func NodePoolHref(clusterID, id string) string {
	return BasePath + "/clusters/" + clusterID + "/nodepools/" + id
}
