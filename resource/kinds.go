package resource

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// On-parent-delete policies of a child kind.
const (
	// OnParentDeleteCascade deletes the children with their parent (node
	// pools with their cluster).
	OnParentDeleteCascade = "cascade"
	// OnParentDeleteRestrict refuses to delete a parent that still has live
	// children of this kind.
	OnParentDeleteRestrict = "restrict"
)

// Name limits of a configured kind that does not set its own: the limits of
// Cluster, the kind most configured kinds resemble.
const (
	DefaultNameMinLen = 3
	DefaultNameMaxLen = 53
	// nameLimit is the most any kind may allow: a name is one DNS label.
	nameLimit = 63
)

// Kind declares one resource kind: its routes, its place in the parent tree
// and the rules the API applies to it. The field names are upstream
// HyperFleet's "entities", so an upstream file loads unchanged.
type Kind struct {
	Kind       string `json:"kind"`
	Plural     string `json:"plural"`
	ParentKind string `json:"parent_kind,omitempty"`
	// OnParentDelete is cascade or restrict; empty on a kind without parent.
	OnParentDelete string `json:"on_parent_delete,omitempty"`
	// RequiredAdapters are the adapters whose reports decide Reconciled;
	// nil means the table does not say: the HYPERFLEET_<KIND>_ADAPTERS
	// variable decides, and without it a kind of a kinds file has none
	// (upstream's rule) while a built-in kind stops start-up.
	RequiredAdapters []string `json:"required_adapters"`
	// OptionalAdapters run every round as the required ones do and report,
	// but never decide Ready, Reconciled or removal: a new adapter rolled
	// out before it is required, or one that only informs.
	OptionalAdapters  []string        `json:"optional_adapters,omitempty"`
	NameMinLen        int             `json:"name_min_len"`
	NameMaxLen        int             `json:"name_max_len"`
	SpecSchemaName    string          `json:"spec_schema_name,omitempty"`
	RequireSpecSchema bool            `json:"require_spec_schema,omitempty"`
	References        []Reference     `json:"references,omitempty"`
	Conditions        []ConditionRule `json:"conditions,omitempty"`
	// SearchDisallowedFields are search fields (spec, labels.owner, ...)
	// refused in the kind's searches, each with everything under it.
	SearchDisallowedFields []string `json:"search_disallowed_fields,omitempty"`
	// Line is where the kind starts in its file (0 for the defaults), so
	// errors found after loading can still point at it.
	Line int `json:"-"`
}

// Reference declares a typed link from a resource to others.
type Reference struct {
	RefType    string `json:"ref_type"`
	TargetKind string `json:"target_kind"`
	Min        int    `json:"min"`
	// Max is the most links of this type; 0 means no limit.
	Max  int `json:"max"`
	Line int `json:"-"`
}

// ConditionRule adds a condition of the operator's own to a kind, from a CEL
// expression over the adapter statuses.
type ConditionRule struct {
	Type       string `json:"type"`
	Expression string `json:"expression"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	Line       int    `json:"-"`
}

// DefaultKinds are the kinds of an API started without a kinds file; they
// reproduce the contract as it was before kinds became configuration.
func DefaultKinds() []Kind {
	return []Kind{
		{Kind: KindCluster, Plural: "clusters", NameMinLen: 3, NameMaxLen: 53, SpecSchemaName: "ClusterSpec"},
		{Kind: KindNodePool, Plural: "nodepools", ParentKind: KindCluster, OnParentDelete: OnParentDeleteCascade,
			NameMinLen: 3, NameMaxLen: 15, SpecSchemaName: "NodePoolSpec"},
	}
}

// ReservedPlurals are path segments under /api/hyperfleet/v1 (or beside it)
// that the API serves itself; a kind named so would shadow them.
var ReservedPlurals = []string{"healthz", "readyz", "metrics", "openapi", "openapi.html", "resources", "statuses", "force-delete", "api"}

var (
	kindPattern   = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)
	pluralPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
)

// KindError is one problem in a kinds file: where it is, what is wrong and
// how to fix it.
type KindError struct {
	File string
	Line int
	Msg  string
	Fix  string
}

func (e *KindError) Error() string {
	pos := e.File
	if pos == "" {
		pos = "kinds"
	}
	if e.Line > 0 {
		pos = fmt.Sprintf("%s:%d", pos, e.Line)
	}
	if e.Fix == "" {
		return pos + ": " + e.Msg
	}
	return pos + ": " + e.Msg + "; " + e.Fix
}

// Kinds is a validated kinds table.
type Kinds struct {
	// file is the kinds file the table came from; "" for built-in tables.
	file string
	// ordered lists parents before their children, in file order otherwise.
	ordered  []Kind
	byKind   map[string]int
	byPlural map[string]int
}

// Defaults is the table of DefaultKinds.
func Defaults() *Kinds {
	t, err := NewKinds("", DefaultKinds())
	if err != nil {
		// The defaults are constants; a failure is a programming error
		// caught by the package's tests.
		panic("resource: invalid default kinds: " + err.Error())
	}
	return t
}

// NewKinds validates a list of kinds, fills in defaults and returns the
// table. file names the source in errors ("" for built-in lists).
func NewKinds(file string, kinds []Kind) (*Kinds, error) {
	fail := func(line int, fix, format string, args ...any) error {
		return &KindError{File: file, Line: line, Msg: fmt.Sprintf(format, args...), Fix: fix}
	}
	if len(kinds) == 0 {
		return nil, fail(0, "declare at least one kind under entities:", "no kinds are declared")
	}
	t := &Kinds{file: file, byKind: map[string]int{}, byPlural: map[string]int{}}
	list := make([]Kind, len(kinds))
	for i, k := range kinds {
		k, err := t.checkKind(k, list, fail)
		if err != nil {
			return nil, err
		}
		t.byKind[k.Kind] = i
		t.byPlural[k.Plural] = i
		list[i] = k
	}
	if err := t.checkLinks(list, fail); err != nil {
		return nil, err
	}
	if err := checkCycles(t, list, fail); err != nil {
		return nil, err
	}
	t.ordered = orderParentsFirst(list)
	for i, k := range t.ordered {
		t.byKind[k.Kind] = i
		t.byPlural[k.Plural] = i
	}
	return t, nil
}

// failFunc builds a KindError for a line of the kinds file.
type failFunc func(line int, fix, format string, args ...any) error

// checkKind validates one kind against those before it (list, indexed by
// t) and fills its defaults; it returns a copy the caller cannot alias.
func (t *Kinds) checkKind(k Kind, list []Kind, fail failFunc) (Kind, error) {
	k.RequiredAdapters = slices.Clone(k.RequiredAdapters)
	k.OptionalAdapters = slices.Clone(k.OptionalAdapters)
	k.SearchDisallowedFields = slices.Clone(k.SearchDisallowedFields)
	k.References = slices.Clone(k.References)
	k.Conditions = slices.Clone(k.Conditions)
	if !kindPattern.MatchString(k.Kind) {
		return k, fail(k.Line, "use an UpperCamelCase name of letters and digits, e.g. MachinePool", "kind %q is not a valid kind name", k.Kind)
	}
	if _, dup := t.byKind[k.Kind]; dup {
		return k, fail(k.Line, "declare each kind once", "kind %s is declared twice", k.Kind)
	}
	if err := t.checkPlural(k, list, fail); err != nil {
		return k, err
	}
	if k.ParentKind == "" && k.OnParentDelete != "" {
		return k, fail(k.Line, "remove on_parent_delete or set parent_kind", "kind %s has on_parent_delete but no parent_kind", k.Kind)
	}
	if k.ParentKind != "" {
		switch k.OnParentDelete {
		case "":
			k.OnParentDelete = OnParentDeleteCascade
		case OnParentDeleteCascade, OnParentDeleteRestrict:
		default:
			return k, fail(k.Line, "use cascade or restrict", "on_parent_delete %q of kind %s is not a policy", k.OnParentDelete, k.Kind)
		}
	}
	if k.NameMinLen == 0 {
		k.NameMinLen = DefaultNameMinLen
	}
	if k.NameMaxLen == 0 {
		k.NameMaxLen = max(DefaultNameMaxLen, k.NameMinLen)
	}
	if k.NameMinLen < 1 || k.NameMaxLen > nameLimit || k.NameMinLen > k.NameMaxLen {
		return k, fail(k.Line, fmt.Sprintf("use 1 <= name_min_len <= name_max_len <= %d", nameLimit),
			"name limits %d-%d of kind %s are out of range", k.NameMinLen, k.NameMaxLen, k.Kind)
	}
	if k.SpecSchemaName == "" {
		k.SpecSchemaName = k.Kind + "Spec"
	}
	if err := checkAdapterLists(k); err != nil {
		return k, fail(k.Line, err.fix, "%s", err.msg)
	}
	for _, f := range k.SearchDisallowedFields {
		if !searchableRoot(f) {
			return k, fail(k.Line, "name a search field or the start of one: "+strings.Join(searchRoots, ", ")+" (e.g. spec, labels.owner)",
				"search_disallowed_fields of kind %s names %q, which is not a search field", k.Kind, f)
		}
	}
	return k, checkConditions(k, fail)
}

// checkPlural refuses a missing, malformed, reserved or repeated plural.
func (t *Kinds) checkPlural(k Kind, list []Kind, fail failFunc) error {
	switch {
	case k.Plural == "":
		return fail(k.Line, "set plural, the path segment of the kind's routes (e.g. "+strings.ToLower(k.Kind)+"s)", "kind %s has no plural", k.Kind)
	case !pluralPattern.MatchString(k.Plural):
		return fail(k.Line, "use lowercase letters, digits and dashes, starting with a letter", "plural %q of kind %s is not a valid path segment", k.Plural, k.Kind)
	case slices.Contains(ReservedPlurals, k.Plural):
		return fail(k.Line, "choose another plural", "plural %q of kind %s would shadow the API's own /%s route", k.Plural, k.Kind, k.Plural)
	}
	if j, dup := t.byPlural[k.Plural]; dup {
		return fail(k.Line, "give each kind its own plural", "plural %q of kind %s is already the plural of kind %s", k.Plural, k.Kind, list[j].Kind)
	}
	return nil
}

// checkConditions refuses a kind's condition rules without a type or an
// expression, repeated, or naming a condition the API computes.
func checkConditions(k Kind, fail failFunc) error {
	types := map[string]bool{}
	for _, c := range k.Conditions {
		if c.Type == "" || c.Expression == "" {
			return fail(lineOr(c.Line, k.Line), "give every condition a type and an expression", "a condition of kind %s lacks type or expression", k.Kind)
		}
		if types[c.Type] || isFixedCondition(c.Type) {
			return fail(lineOr(c.Line, k.Line), "choose a condition type of your own", "condition %s of kind %s is declared twice or is one the API computes", c.Type, k.Kind)
		}
		types[c.Type] = true
	}
	return nil
}

// checkLinks refuses a parent kind or a reference target that is not
// declared, and malformed references.
func (t *Kinds) checkLinks(list []Kind, fail failFunc) error {
	for _, k := range list {
		if k.ParentKind != "" {
			if _, ok := t.byKind[k.ParentKind]; !ok {
				return fail(k.Line, "declare the parent kind or remove parent_kind", "parent_kind %s of kind %s is not declared", k.ParentKind, k.Kind)
			}
		}
		refTypes := map[string]bool{}
		for _, r := range k.References {
			line := lineOr(r.Line, k.Line)
			if r.RefType == "" {
				return fail(line, "name the link, e.g. ref_type: channel", "a reference of kind %s has no ref_type", k.Kind)
			}
			if refTypes[r.RefType] {
				return fail(line, "declare each ref_type once", "reference %s of kind %s is declared twice", r.RefType, k.Kind)
			}
			refTypes[r.RefType] = true
			if _, ok := t.byKind[r.TargetKind]; !ok {
				return fail(line, "declare the target kind or correct target_kind", "reference %s of kind %s targets kind %q, which is not declared", r.RefType, k.Kind, r.TargetKind)
			}
			if r.Min < 0 || r.Max < 0 || r.Max > 0 && r.Min > r.Max {
				return fail(line, "use 0 <= min <= max (max 0 means no limit)", "reference %s of kind %s has min %d and max %d", r.RefType, k.Kind, r.Min, r.Max)
			}
		}
	}
	return nil
}

// checkCycles follows each kind's parents; a chain longer than the table
// came back to where it started.
func checkCycles(t *Kinds, list []Kind, fail failFunc) error {
	for _, k := range list {
		chain := []string{k.Kind}
		for p := k.ParentKind; p != ""; p = list[t.byKind[p]].ParentKind {
			chain = append(chain, p)
			if p == k.Kind {
				return fail(k.Line, "a kind cannot be its own ancestor; remove one parent_kind", "parent kinds form a cycle: %s", strings.Join(chain, " -> "))
			}
			if len(chain) > len(list) {
				break
			}
		}
	}
	return nil
}

// listError is a problem in a kind's adapter lists.
type listError struct{ msg, fix string }

// checkAdapterLists refuses empty or repeated names, and an adapter both
// required and optional: readiness either waits for it or it does not.
func checkAdapterLists(k Kind) *listError {
	seen := map[string]bool{}
	for _, a := range k.RequiredAdapters {
		if strings.TrimSpace(a) == "" || seen[a] {
			return &listError{fmt.Sprintf("required_adapters of kind %s has an empty or repeated name %q", k.Kind, a), "list each adapter name once"}
		}
		if err := CheckAdapterName(a); err != nil {
			return &listError{fmt.Sprintf("required_adapters of kind %s: %v: no status report could name it, so the kind could never be Ready", k.Kind, err), "use the adapter's name as its adapter-config.yaml declares it"}
		}
		seen[a] = true
	}
	optional := map[string]bool{}
	for _, a := range k.OptionalAdapters {
		if strings.TrimSpace(a) == "" || optional[a] {
			return &listError{fmt.Sprintf("optional_adapters of kind %s has an empty or repeated name %q", k.Kind, a), "list each adapter name once"}
		}
		if err := CheckAdapterName(a); err != nil {
			return &listError{fmt.Sprintf("optional_adapters of kind %s: %v: no status report could name it", k.Kind, err), "use the adapter's name as its adapter-config.yaml declares it"}
		}
		if seen[a] {
			return &listError{fmt.Sprintf("adapter %q of kind %s is in both required_adapters and optional_adapters", a, k.Kind),
				"keep it in required_adapters if readiness waits for it, else in optional_adapters"}
		}
		optional[a] = true
	}
	return nil
}

// searchRoots are the first segments of the fields a search names
// (apiserver/search resolves them).
var searchRoots = []string{"id", "name", "kind", "generation", "created_time", "updated_time", "deleted_time",
	"created_by", "updated_by", "labels", "spec", "status", "owner_references"}

func searchableRoot(field string) bool {
	root, _, _ := strings.Cut(field, ".")
	root, _, _ = strings.Cut(root, "[")
	return slices.Contains(searchRoots, root) && !strings.HasSuffix(field, ".")
}

// SearchDisallowed reports whether a search field is refused for a kind:
// it is one of the kind's search_disallowed_fields or lies under one
// (spec.a.b under spec, labels['x'] under labels).
func (k Kind) SearchDisallowed(field string) bool {
	for _, d := range k.SearchDisallowedFields {
		if field == d || strings.HasPrefix(field, d+".") || strings.HasPrefix(field, d+"[") {
			return true
		}
	}
	return false
}

func lineOr(line, fallback int) int {
	if line > 0 {
		return line
	}
	return fallback
}

func isFixedCondition(t string) bool {
	switch t {
	case ConditionReady, ConditionReconciled, ConditionAvailable, ConditionLastKnownReconciled, ConditionApplied, ConditionHealth, ConditionFinalized:
		return true
	}
	return false
}

// orderParentsFirst sorts a cycle-free list so every kind follows its
// parent, keeping file order where the tree allows.
func orderParentsFirst(list []Kind) []Kind {
	out := make([]Kind, 0, len(list))
	placed := map[string]bool{}
	for len(out) < len(list) {
		for _, k := range list {
			if !placed[k.Kind] && (k.ParentKind == "" || placed[k.ParentKind]) {
				placed[k.Kind] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// File names the kinds file the table came from; "" for a built-in table
// (the default kinds).
func (t *Kinds) File() string { return t.file }

// All lists the kinds, every parent before its children.
func (t *Kinds) All() []Kind { return slices.Clone(t.ordered) }

// Names lists the kind names in the order of All.
func (t *Kinds) Names() []string {
	out := make([]string, len(t.ordered))
	for i, k := range t.ordered {
		out[i] = k.Kind
	}
	return out
}

// Get returns a kind by name.
func (t *Kinds) Get(kind string) (Kind, bool) {
	i, ok := t.byKind[kind]
	if !ok {
		return Kind{}, false
	}
	return t.ordered[i], true
}

// ByPlural returns the kind served under a plural.
func (t *Kinds) ByPlural(plural string) (Kind, bool) {
	i, ok := t.byPlural[plural]
	if !ok {
		return Kind{}, false
	}
	return t.ordered[i], true
}

// Children lists the kinds whose parent is kind.
func (t *Kinds) Children(kind string) []Kind {
	var out []Kind
	for _, k := range t.ordered {
		if k.ParentKind == kind {
			out = append(out, k)
		}
	}
	return out
}

// HasChildren reports whether any kind has kind as its parent.
func (t *Kinds) HasChildren(kind string) bool { return len(t.Children(kind)) > 0 }

// Href is a resource's canonical path: /<plural>/{id}, or for a child
// /<parent plural>/{parent id}/<plural>/{id}. An unknown kind falls back to
// its lowercased name plus "s", so a stale row still gets a usable path.
func (t *Kinds) Href(kind, id, parentID string) string {
	k, ok := t.Get(kind)
	if !ok {
		return BasePath + "/" + strings.ToLower(kind) + "s/" + id
	}
	if k.ParentKind == "" || parentID == "" {
		return BasePath + "/" + k.Plural + "/" + id
	}
	return t.Href(k.ParentKind, parentID, "") + "/" + k.Plural + "/" + id
}

// Owner is the owner reference of a child resource; nil for a kind without
// parent or a resource without parent id.
func (t *Kinds) Owner(kind, parentID string) *OwnerReference {
	k, ok := t.Get(kind)
	if !ok || k.ParentKind == "" || parentID == "" {
		return nil
	}
	return &OwnerReference{Kind: k.ParentKind, ID: parentID, Href: t.Href(k.ParentKind, parentID, "")}
}

// RegistrationVariable names the environment variable that registers (or
// overrides) the adapters of a kind: HYPERFLEET_CLUSTER_ADAPTERS,
// HYPERFLEET_NODEPOOL_ADAPTERS, HYPERFLEET_WIFCONFIG_ADAPTERS.
func RegistrationVariable(kind string) string {
	return "HYPERFLEET_" + strings.ToUpper(kind) + "_ADAPTERS"
}

// OptionalVariable names the environment variable that sets (or
// overrides) the optional adapters of a kind:
// HYPERFLEET_CLUSTER_OPTIONAL_ADAPTERS, HYPERFLEET_WIFCONFIG_OPTIONAL_ADAPTERS.
func OptionalVariable(kind string) string {
	return "HYPERFLEET_" + strings.ToUpper(kind) + "_OPTIONAL_ADAPTERS"
}

// IsDefault reports whether a kind is placed exactly as in DefaultKinds
// (same plural, same parent, recursively): its paths are then the ones code
// without the table builds, such as ClusterHref and NodePoolHref.
func (t *Kinds) IsDefault(kind string) bool {
	k, ok := t.Get(kind)
	if !ok {
		return false
	}
	for _, d := range DefaultKinds() {
		if d.Kind == kind {
			return d.Plural == k.Plural && d.ParentKind == k.ParentKind && (k.ParentKind == "" || t.IsDefault(k.ParentKind))
		}
	}
	return false
}
