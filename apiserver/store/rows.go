// Row mapping: the tables' gorm rows and their conversion to and from the
// API's resource types.

package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// jsonText is a JSON document column: TEXT holding the bytes the API wrote
// (a resource's spec, a report's documents; schema version 12 on
// PostgreSQL), or jsonb on PostgreSQL for labels, conditions and
// references, which the indexes read and the API writes from typed values.
type jsonText []byte

func (j jsonText) Value() (driver.Value, error) {
	if j == nil {
		return nil, nil
	}
	return string(j), nil
}

func (j *jsonText) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = jsonText(v)
	default:
		return fmt.Errorf("store: cannot scan %T into JSON", src)
	}
	return nil
}

type resourceRow struct {
	ID         string `gorm:"primaryKey"`
	Kind       string
	ParentID   *string
	Name       string
	Generation int64
	Spec       jsonText
	Labels     jsonText
	Conditions jsonText
	// ConditionTerms lists the conditions' c:<Type>=<Status> terms, sorted
	// (schema version 6): SQLite's term index follows this column, so a
	// status report that changes no status costs the index nothing.
	ConditionTerms jsonText
	Refs           jsonText
	CreatedTime    time.Time
	UpdatedTime    time.Time
	DeletedTime    *time.Time
	CreatedBy      string
	UpdatedBy      string
	DeletedBy      string
	// Tenant is the resource's tenancy in canonical form ("" without
	// tenancy; schema version 10). Read-only to gorm: CreateResource
	// writes it, and only AssignTenancy changes it afterwards, once, for
	// a row stored without one.
	Tenant string `gorm:"->"`
}

func (resourceRow) TableName() string { return "resources" }

type statusRow struct {
	ResourceID         string `gorm:"primaryKey"`
	Adapter            string `gorm:"primaryKey"`
	ObservedGeneration int64
	ObservedTime       time.Time
	Conditions         jsonText
	Metadata           jsonText
	Data               jsonText
	CreatedTime        time.Time
	LastReportTime     time.Time
}

func (statusRow) TableName() string { return "adapter_statuses" }

type outboxRow struct {
	ID          int64 `gorm:"primaryKey;autoIncrement"`
	Kind        string
	ResourceID  string
	ParentID    string
	Generation  int64
	Reason      string
	CreatedTime time.Time
	TraceParent string
	Tenant      string
}

func (outboxRow) TableName() string { return "outbox" }

type settingRow struct {
	Key   string `gorm:"primaryKey"`
	Value string
}

func (settingRow) TableName() string { return "settings" }

// utc normalises times to what both backends store: UTC, microseconds.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func toRow(r *resource.Resource) (resourceRow, error) {
	labels, err := json.Marshal(nonNilLabels(r.Labels))
	if err != nil {
		return resourceRow{}, err
	}
	conds, err := json.Marshal(r.Status.Conditions)
	if err != nil {
		return resourceRow{}, err
	}
	refs, err := json.Marshal(toStoredLinks(r.References))
	if err != nil {
		return resourceRow{}, err
	}
	spec := r.Spec
	if len(spec) == 0 {
		spec = json.RawMessage("{}")
	}
	row := resourceRow{
		ID: r.ID, Kind: r.Kind, Name: r.Name, Generation: r.Generation,
		Spec: jsonText(spec), Labels: labels, Conditions: conds, ConditionTerms: conditionTerms(r.Status.Conditions), Refs: refs,
		CreatedTime: utc(r.CreatedTime), UpdatedTime: utc(r.UpdatedTime),
		CreatedBy: r.CreatedBy, UpdatedBy: r.UpdatedBy, DeletedBy: r.DeletedBy,
		Tenant: resource.TenancyKey(r.Tenancy),
	}
	if r.OwnerReferences != nil {
		parent := r.OwnerReferences.ID
		row.ParentID = &parent
	}
	if r.DeletedTime != nil {
		t := utc(*r.DeletedTime)
		row.DeletedTime = &t
	}
	return row, nil
}

// conditionTerms is the ConditionTerms column of a resource with these
// conditions: a JSON array of distinct terms in byte order.
func conditionTerms(conds []resource.Condition) jsonText {
	terms := make([]string, 0, len(conds))
	for _, c := range conds {
		terms = append(terms, search.ConditionTerm(c.Type, string(c.Status)))
	}
	slices.Sort(terms)
	raw, _ := json.Marshal(slices.Compact(terms)) // strings always encode
	return raw
}

func nonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}

func fromRow(kinds *resource.Kinds, row *resourceRow) (resource.Resource, error) {
	r := resource.Resource{
		Kind: row.Kind, ID: row.ID, Name: row.Name, Generation: row.Generation,
		Spec:        json.RawMessage(row.Spec),
		CreatedTime: row.CreatedTime.UTC(), UpdatedTime: row.UpdatedTime.UTC(),
		CreatedBy: row.CreatedBy, UpdatedBy: row.UpdatedBy, DeletedBy: row.DeletedBy,
		Tenancy: resource.ParseTenancyKey(row.Tenant),
	}
	var err error
	if r.Labels, err = decodeLabels(row.Labels); err != nil {
		return r, fmt.Errorf("decode labels of %s: %w", row.ID, err)
	}
	if r.Status.Conditions, err = decodeConditions(row.Conditions); err != nil {
		return r, fmt.Errorf("decode conditions of %s: %w", row.ID, err)
	}
	if r.Status.Conditions == nil {
		r.Status.Conditions = []resource.Condition{}
	}
	// Most resources link to nothing: skip the decoder for an empty list.
	if len(row.Refs) > 0 && string(row.Refs) != "[]" {
		var links []storedLink
		if err := json.Unmarshal(row.Refs, &links); err != nil {
			return r, fmt.Errorf("decode references of %s: %w", row.ID, err)
		}
		r.References = fromStoredLinks(kinds, links)
	}
	if row.DeletedTime != nil {
		t := row.DeletedTime.UTC()
		r.DeletedTime = &t
	}
	parentID := ""
	if row.ParentID != nil {
		parentID = *row.ParentID
	}
	r.OwnerReferences = kinds.Owner(row.Kind, parentID)
	r.Href = kinds.Href(row.Kind, row.ID, parentID)
	return r, nil
}

// storedLink is a link as the refs column keeps it: the target's parent
// rather than its href, which is rebuilt from the kinds table on read.
type storedLink struct {
	RefType  string `json:"ref_type"`
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	ParentID string `json:"parent_id,omitempty"`
}

func toStoredLinks(links []resource.Link) []storedLink {
	out := make([]storedLink, 0, len(links))
	for _, l := range links {
		out = append(out, storedLink{RefType: l.RefType, Kind: l.Kind, ID: l.ID, ParentID: parentFromHref(l.Href, l.ID)})
	}
	return out
}

// parentFromHref recovers a nested target's parent id from its href
// (.../<parent plural>/<parent id>/<plural>/<id>): the href is the one place
// a Link carries it.
func parentFromHref(href, id string) string {
	parts := strings.Split(strings.TrimPrefix(href, resource.BasePath+"/"), "/")
	if len(parts) < 4 || parts[len(parts)-1] != id {
		return ""
	}
	return parts[len(parts)-3]
}

func fromStoredLinks(kinds *resource.Kinds, links []storedLink) []resource.Link {
	if len(links) == 0 {
		return nil
	}
	out := make([]resource.Link, 0, len(links))
	for _, l := range links {
		out = append(out, resource.Link{RefType: l.RefType, Kind: l.Kind, ID: l.ID, Href: kinds.Href(l.Kind, l.ID, l.ParentID)})
	}
	return out
}

func toStatusRow(resourceID string, st *resource.AdapterStatus) (statusRow, error) {
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = utc(st.Conditions[i].LastTransitionTime)
	}
	conds, err := json.Marshal(st.Conditions)
	if err != nil {
		return statusRow{}, err
	}
	return statusRow{
		ResourceID: resourceID, Adapter: st.Adapter, ObservedGeneration: st.ObservedGeneration,
		ObservedTime: utc(st.ObservedTime), Conditions: conds,
		Metadata: nullableJSON(st.Metadata), Data: nullableJSON(st.Data),
		CreatedTime: utc(st.CreatedTime), LastReportTime: utc(st.LastReportTime),
	}, nil
}

func nullableJSON(raw json.RawMessage) jsonText {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return jsonText(raw)
}

func fromStatusRow(row *statusRow) (resource.AdapterStatus, error) {
	st := resource.AdapterStatus{
		Adapter: row.Adapter, ObservedGeneration: row.ObservedGeneration, ObservedTime: row.ObservedTime.UTC(),
		Metadata: json.RawMessage(row.Metadata), Data: json.RawMessage(row.Data),
		CreatedTime: row.CreatedTime.UTC(), LastReportTime: row.LastReportTime.UTC(),
	}
	if err := json.Unmarshal(row.Conditions, &st.Conditions); err != nil {
		return st, fmt.Errorf("decode conditions of %s/%s: %w", row.ResourceID, row.Adapter, err)
	}
	return st, nil
}
