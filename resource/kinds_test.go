package resource

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultKindsReproduceTheContract(t *testing.T) {
	k := Defaults()
	if got := strings.Join(k.Names(), ","); got != "Cluster,NodePool" {
		t.Fatalf("default kinds %s, want Cluster,NodePool", got)
	}
	c, _ := k.Get(KindCluster)
	if c.Plural != "clusters" || c.ParentKind != "" || c.NameMinLen != 3 || c.NameMaxLen != 53 || c.RequiredAdapters != nil {
		t.Fatalf("Cluster: %+v", c)
	}
	np, _ := k.Get(KindNodePool)
	if np.Plural != "nodepools" || np.ParentKind != KindCluster || np.OnParentDelete != OnParentDeleteCascade || np.NameMinLen != 3 || np.NameMaxLen != 15 {
		t.Fatalf("NodePool: %+v", np)
	}
	if got, want := k.Href(KindNodePool, "n1", "c1"), NodePoolHref("c1", "n1"); got != want {
		t.Fatalf("node pool href %s, want %s", got, want)
	}
	if got, want := k.Href(KindCluster, "c1", ""), ClusterHref("c1"); got != want {
		t.Fatalf("cluster href %s, want %s", got, want)
	}
	if o := k.Owner(KindNodePool, "c1"); o == nil || o.Kind != KindCluster || o.Href != ClusterHref("c1") {
		t.Fatalf("node pool owner %+v", o)
	}
	if o := k.Owner(KindCluster, ""); o != nil {
		t.Fatalf("cluster owner %+v, want none", o)
	}
	if RegistrationVariable(KindCluster) != "HYPERFLEET_CLUSTER_ADAPTERS" || RegistrationVariable(KindNodePool) != "HYPERFLEET_NODEPOOL_ADAPTERS" {
		t.Fatal("registration variables changed")
	}
}

func TestNewKindsFillsDefaultsAndOrdersParentsFirst(t *testing.T) {
	k, err := NewKinds("f.yaml", []Kind{
		{Kind: "Version", Plural: "versions", ParentKind: "Channel", OnParentDelete: OnParentDeleteRestrict},
		{Kind: "Patch", Plural: "patches", ParentKind: "Version"},
		{Kind: "Channel", Plural: "channels"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(k.Names(), ","); got != "Channel,Version,Patch" {
		t.Fatalf("order %s, want parents first", got)
	}
	p, _ := k.Get("Patch")
	if p.OnParentDelete != OnParentDeleteCascade || p.NameMinLen != DefaultNameMinLen || p.NameMaxLen != DefaultNameMaxLen || p.SpecSchemaName != "PatchSpec" {
		t.Fatalf("defaults not filled: %+v", p)
	}
	if got := k.Href("Patch", "p1", "v1"); got != BasePath+"/versions/v1/patches/p1" {
		t.Fatalf("href %s", got)
	}
	if ch := k.Children("Channel"); len(ch) != 1 || ch[0].Kind != "Version" {
		t.Fatalf("children of Channel: %+v", ch)
	}
	if b, ok := k.ByPlural("patches"); !ok || b.Kind != "Patch" {
		t.Fatalf("by plural: %+v %v", b, ok)
	}
}

func TestNewKindsRefusesBadTables(t *testing.T) {
	cluster := Kind{Kind: "Cluster", Plural: "clusters", Line: 2}
	for _, tc := range []struct {
		name  string
		kinds []Kind
		want  string // in the message
		line  int
	}{
		{"none", nil, "no kinds", 0},
		{"bad kind name", []Kind{{Kind: "cluster", Plural: "clusters", Line: 3}}, `kind "cluster" is not a valid`, 3},
		{"duplicate kind", []Kind{cluster, {Kind: "Cluster", Plural: "others", Line: 7}}, "declared twice", 7},
		{"no plural", []Kind{{Kind: "Cluster", Line: 4}}, "has no plural", 4},
		{"bad plural", []Kind{{Kind: "Cluster", Plural: "Clusters/x", Line: 4}}, "not a valid path segment", 4},
		{"duplicate plural", []Kind{cluster, {Kind: "Other", Plural: "clusters", Line: 9}}, `already the plural of kind Cluster`, 9},
		{"shadows healthz", []Kind{{Kind: "Health", Plural: "healthz", Line: 5}}, "shadow", 5},
		{"shadows resources", []Kind{{Kind: "Res", Plural: "resources", Line: 5}}, "shadow", 5},
		{"shadows openapi", []Kind{{Kind: "Doc", Plural: "openapi", Line: 5}}, "shadow", 5},
		{"unknown parent", []Kind{cluster, {Kind: "Pool", Plural: "pools", ParentKind: "Clustr", Line: 11}}, "parent_kind Clustr of kind Pool is not declared", 11},
		{"self parent", []Kind{{Kind: "Loop", Plural: "loops", ParentKind: "Loop", Line: 3}}, "cycle: Loop -> Loop", 3},
		{"cycle", []Kind{{Kind: "A", Plural: "as", ParentKind: "B", Line: 2}, {Kind: "B", Plural: "bs", ParentKind: "A", Line: 6}}, "cycle: A -> B -> A", 2},
		{"bad policy", []Kind{cluster, {Kind: "Pool", Plural: "pools", ParentKind: "Cluster", OnParentDelete: "orphan", Line: 8}}, "not a policy", 8},
		{"policy without parent", []Kind{{Kind: "Pool", Plural: "pools", OnParentDelete: "cascade", Line: 8}}, "no parent_kind", 8},
		{"name limits", []Kind{{Kind: "Pool", Plural: "pools", NameMinLen: 10, NameMaxLen: 5, Line: 8}}, "out of range", 8},
		{"name too long", []Kind{{Kind: "Pool", Plural: "pools", NameMaxLen: 64, Line: 8}}, "out of range", 8},
		{"repeated adapter", []Kind{{Kind: "Pool", Plural: "pools", RequiredAdapters: []string{"a", "a"}, Line: 8}}, "repeated", 8},
		{"repeated optional adapter", []Kind{{Kind: "Pool", Plural: "pools", OptionalAdapters: []string{"a", "a"}, Line: 8}}, "optional_adapters of kind Pool has an empty or repeated name", 8},
		{"empty optional adapter", []Kind{{Kind: "Pool", Plural: "pools", OptionalAdapters: []string{" "}, Line: 8}}, "empty or repeated", 8},
		{"required and optional", []Kind{{Kind: "Pool", Plural: "pools", RequiredAdapters: []string{"a"}, OptionalAdapters: []string{"a"}, Line: 8}}, `adapter "a" of kind Pool is in both required_adapters and optional_adapters`, 8},
		{"unknown search field", []Kind{{Kind: "Pool", Plural: "pools", SearchDisallowedFields: []string{"specs"}, Line: 8}}, `search_disallowed_fields of kind Pool names "specs"`, 8},
		{"unknown reference", []Kind{cluster, {Kind: "Pool", Plural: "pools", References: []Reference{{RefType: "wif", TargetKind: "WifConfig", Line: 14}}, Line: 8}}, `targets kind "WifConfig", which is not declared`, 14},
		{"reference without type", []Kind{cluster, {Kind: "Pool", Plural: "pools", References: []Reference{{TargetKind: "Cluster"}}, Line: 8}}, "no ref_type", 8},
		{"reference min over max", []Kind{cluster, {Kind: "Pool", Plural: "pools", References: []Reference{{RefType: "c", TargetKind: "Cluster", Min: 3, Max: 1, Line: 9}}, Line: 8}}, "min 3 and max 1", 9},
		{"fixed condition", []Kind{{Kind: "Pool", Plural: "pools", Conditions: []ConditionRule{{Type: "Ready", Expression: "true", Line: 12}}, Line: 8}}, "one the API computes", 12},
		{"condition without expression", []Kind{{Kind: "Pool", Plural: "pools", Conditions: []ConditionRule{{Type: "Mine", Line: 12}}, Line: 8}}, "lacks type or expression", 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewKinds("kinds.yaml", tc.kinds)
			var ke *KindError
			if !errors.As(err, &ke) {
				t.Fatalf("error %v, want a *KindError", err)
			}
			if !strings.Contains(ke.Msg, tc.want) || ke.Line != tc.line || ke.Fix == "" {
				t.Fatalf("error %+v, want %q at line %d with a fix", ke, tc.want, tc.line)
			}
			if tc.line > 0 && !strings.HasPrefix(err.Error(), "kinds.yaml:") {
				t.Fatalf("error %q does not start with the file and line", err)
			}
		})
	}
}

func TestOptionalAdaptersAndTheTableSource(t *testing.T) {
	k, err := NewKinds("kinds.yaml", []Kind{{Kind: "WifConfig", Plural: "wifconfigs", OptionalAdapters: []string{"audit"}}})
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := k.Get("WifConfig"); len(w.OptionalAdapters) != 1 || w.OptionalAdapters[0] != "audit" || w.RequiredAdapters != nil {
		t.Fatalf("WifConfig %+v", w)
	}
	if k.File() != "kinds.yaml" || Defaults().File() != "" {
		t.Fatalf("File() = %q and %q", k.File(), Defaults().File())
	}
	if OptionalVariable("WifConfig") != "HYPERFLEET_WIFCONFIG_OPTIONAL_ADAPTERS" || OptionalVariable(KindCluster) != "HYPERFLEET_CLUSTER_OPTIONAL_ADAPTERS" {
		t.Fatal("optional variables changed")
	}
}

func TestSearchDisallowed(t *testing.T) {
	k := Kind{SearchDisallowedFields: []string{"spec", "labels.owner", "created_by"}}
	for field, want := range map[string]bool{
		"spec.a.b": true, "spec[0]": true, "spec": true, "labels.owner": true, "labels.owner.x": true,
		"created_by": true, "labels.team": false, "name": false, "specx": false, "status.conditions.Ready": false,
	} {
		if got := k.SearchDisallowed(field); got != want {
			t.Errorf("SearchDisallowed(%q) = %v, want %v", field, got, want)
		}
	}
	if (Kind{}).SearchDisallowed("spec.a") {
		t.Error("a kind without search_disallowed_fields refuses a field")
	}
}
