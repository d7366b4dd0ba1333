package kindsfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestExampleFileLoads(t *testing.T) {
	tab, err := Load(filepath.Join("..", "..", "deploy", "kinds", "example-kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Warnings) != 0 {
		t.Fatalf("warnings: %v", tab.Warnings)
	}
	if got := strings.Join(tab.Names(), ","); got != "Cluster,NodePool,Channel,Version,WifConfig" {
		t.Fatalf("kinds %s", got)
	}
	c, _ := tab.Get(resource.KindCluster)
	if c.RequiredAdapters != nil {
		t.Fatalf("Cluster adapters %v, want unset (left to the variable)", c.RequiredAdapters)
	}
	ch, _ := tab.Get("Channel")
	if ch.RequiredAdapters == nil || len(ch.RequiredAdapters) != 0 {
		t.Fatalf("Channel adapters %#v, want set and empty", ch.RequiredAdapters)
	}
	v, _ := tab.Get("Version")
	if v.ParentKind != "Channel" || v.OnParentDelete != resource.OnParentDeleteRestrict || len(v.References) != 1 || v.References[0].TargetKind != "Channel" || v.References[0].Max != 1 {
		t.Fatalf("Version %+v", v)
	}
	// The defaults and the example agree on Cluster and NodePool.
	def := resource.Defaults()
	for _, name := range def.Names() {
		want, _ := def.Get(name)
		got, _ := tab.Get(name)
		got.Line = 0
		if got.Plural != want.Plural || got.ParentKind != want.ParentKind || got.OnParentDelete != want.OnParentDelete ||
			got.NameMinLen != want.NameMinLen || got.NameMaxLen != want.NameMaxLen || got.SpecSchemaName != want.SpecSchemaName {
			t.Fatalf("%s in the example %+v differs from the default %+v", name, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		err        string // substring; empty means it loads
		line       int
		warn       string
	}{
		{"minimal", "entities:\n  - kind: Thing\n    plural: things\n", "", 0, ""},
		{"unknown fields warn", "version: 2\nentities:\n  - kind: Thing\n    plural: things\n    colour: blue\n", "", 0, `"colour"`},
		{"conditions", "entities:\n  - kind: Thing\n    plural: things\n    conditions:\n      - type: Mine\n        expression: statuses.exists(s, s.adapter == 'a')\n", "", 0, ""},
		{"empty", "", "the file is empty", 0, ""},
		{"not yaml", "entities: [\n", "not YAML", 0, ""},
		{"no entities", "kinds: []\n", "no entities", 1, ""},
		{"entities not a list", "entities: {}\n", "not a list", 1, ""},
		{"item not a mapping", "entities:\n  - Thing\n", "not a mapping", 2, ""},
		{"wrong type", "entities:\n  - kind: Thing\n    plural: things\n    name_min_len: many\n", "do not decode", 2, ""},
		{"two documents", "entities: []\n---\nentities: []\n", "more than one", 2, ""},
		{"unknown parent", "entities:\n  - kind: Thing\n    plural: things\n  - kind: Part\n    plural: parts\n    parent_kind: Thingy\n", "parent_kind Thingy", 4, ""},
		{"reference line", "entities:\n  - kind: Thing\n    plural: things\n    references:\n      - ref_type: x\n        target_kind: Nope\n", `"Nope"`, 5, ""},
		{"cycle", "entities:\n  - kind: A\n    plural: as\n    parent_kind: B\n  - kind: B\n    plural: bs\n    parent_kind: A\n", "cycle", 2, ""},
		{"shadow", "entities:\n  - kind: Meta\n    plural: metrics\n", "shadow", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := Parse("k.yaml", []byte(tc.file))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.warn != "" && !strings.Contains(strings.Join(tab.Warnings, "\n"), tc.warn) {
					t.Fatalf("warnings %v, want one about %s", tab.Warnings, tc.warn)
				}
				return
			}
			var ke *resource.KindError
			if !errors.As(err, &ke) || !strings.Contains(ke.Msg, tc.err) || ke.Line != tc.line || ke.File != "k.yaml" || ke.Fix == "" {
				t.Fatalf("error %#v, want %q at line %d with a fix", err, tc.err, tc.line)
			}
		})
	}
}

// upstreamEntities is shaped like the entities block upstream HyperFleet's
// chart ships: kinds with and without required_adapters, every descriptor
// field in use.
const upstreamEntities = `entities:
  - kind: Cluster
    plural: clusters
    spec_schema_name: ClusterSpec
    required_adapters: [validation, dns]
    name_min_len: 3
    name_max_len: 53
    require_spec_schema: true
  - kind: NodePool
    plural: nodepools
    parent_kind: Cluster
    on_parent_delete: cascade
    spec_schema_name: NodePoolSpec
    required_adapters: [validation]
    name_min_len: 3
    name_max_len: 15
  - kind: Channel
    plural: channels
    spec_schema_name: ChannelSpec
    search_disallowed_fields: [spec]
  - kind: Version
    plural: versions
    parent_kind: Channel
    on_parent_delete: restrict
    spec_schema_name: VersionSpec
    references:
      - ref_type: channel
        target_kind: Channel
        min: 1
        max: 1
  - kind: WifConfig
    plural: wifconfigs
    spec_schema_name: WifConfigSpec
`

func TestUpstreamEntitiesLoadUnchanged(t *testing.T) {
	tab, err := Parse("values.yaml", []byte(upstreamEntities))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Warnings) != 0 {
		t.Errorf("warnings: %v", tab.Warnings)
	}
	c, _ := tab.Get(resource.KindCluster)
	if strings.Join(c.RequiredAdapters, ",") != "validation,dns" || !c.RequireSpecSchema || c.SpecSchemaName != "ClusterSpec" {
		t.Errorf("Cluster %+v", c)
	}
	// No required_adapters: left to the variable, then none.
	for _, name := range []string{"Channel", "Version", "WifConfig"} {
		if k, _ := tab.Get(name); k.RequiredAdapters != nil || k.SpecSchemaName != name+"Spec" {
			t.Errorf("%s %+v", name, k)
		}
	}
	if ch, _ := tab.Get("Channel"); !ch.SearchDisallowed("spec.tier") || ch.SearchDisallowed("name") {
		t.Errorf("Channel search_disallowed_fields %v", ch.SearchDisallowedFields)
	}
	if tab.File() != "values.yaml" {
		t.Errorf("File() = %q", tab.File())
	}
}

func TestUpstreamForms(t *testing.T) {
	t.Run("required_adapters as a map of names to URLs", func(t *testing.T) {
		tab, err := Parse("k.yaml", []byte("entities:\n  - kind: Cluster\n    plural: clusters\n    required_adapters:\n      validation: http://validation:8080\n      dns: http://dns:8080\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := tab.Get("Cluster"); strings.Join(c.RequiredAdapters, ",") != "validation,dns" {
			t.Errorf("required %v", c.RequiredAdapters)
		}
		if w := strings.Join(tab.Warnings, "\n"); !strings.Contains(w, "k.yaml:4:") || !strings.Contains(w, "the URLs are not used") {
			t.Errorf("warnings %v", tab.Warnings)
		}
	})
	t.Run("conditions in when/output form are skipped with a warning", func(t *testing.T) {
		file := `entities:
  - kind: Cluster
    plural: clusters
    conditions:
      - type: LandingZoneReady
        when:
          expression: statuses.exists(s, s.adapter == "landing-zone")
        output:
          status:
            expression: '"True"'
          reason:
            expression: '"Ready"'
          message:
            expression: '"ready"'
      - type: Mine
        expression: generation > 0
`
		tab, err := Parse("k.yaml", []byte(file))
		if err != nil {
			t.Fatal(err)
		}
		c, _ := tab.Get("Cluster")
		if len(c.Conditions) != 1 || c.Conditions[0].Type != "Mine" || c.Conditions[0].Line != 15 {
			t.Errorf("conditions %+v, want only Mine (line 15)", c.Conditions)
		}
		if w := strings.Join(tab.Warnings, "\n"); !strings.Contains(w, "k.yaml:5: condition LandingZoneReady of kind Cluster is in upstream's when/output form") || !strings.Contains(w, "Rewrite it as expression:") {
			t.Errorf("warnings %v", tab.Warnings)
		}
	})
	t.Run("optional_adapters", func(t *testing.T) {
		tab, err := Parse("k.yaml", []byte("entities:\n  - kind: Cluster\n    plural: clusters\n    required_adapters: []\n    optional_adapters: [audit, cost]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := tab.Get("Cluster"); strings.Join(c.OptionalAdapters, ",") != "audit,cost" || c.RequiredAdapters == nil || len(tab.Warnings) != 0 {
			t.Errorf("Cluster %+v, warnings %v", c, tab.Warnings)
		}
	})
	t.Run("an adapter both required and optional", func(t *testing.T) {
		_, err := Parse("k.yaml", []byte("entities:\n  - kind: Cluster\n    plural: clusters\n    required_adapters: [a]\n    optional_adapters: [a]\n"))
		var ke *resource.KindError
		if !errors.As(err, &ke) || ke.Line != 2 || !strings.Contains(ke.Msg, "in both required_adapters and optional_adapters") || ke.Fix == "" {
			t.Errorf("error %v", err)
		}
	})
	t.Run("required_adapters of the wrong type", func(t *testing.T) {
		_, err := Parse("k.yaml", []byte("entities:\n  - kind: Cluster\n    plural: clusters\n    required_adapters: 5\n"))
		var ke *resource.KindError
		if !errors.As(err, &ke) || ke.Line != 4 || !strings.Contains(ke.Msg, "required_adapters of kind Cluster") {
			t.Errorf("error %v", err)
		}
	})
}

func TestLoadRefusesMissingAndHugeFiles(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "absent.yaml")); err == nil || !strings.Contains(err.Error(), "kinds file") {
		t.Fatalf("missing file: %v", err)
	}
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(huge, []byte("entities: []\n"+strings.Repeat("#", MaxSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(huge); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("huge file: %v", err)
	}
}

// FuzzParse: no input panics, and whatever loads is a consistent table.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kinds", "example-kinds.yaml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("entities:\n  - kind: A\n    plural: as\n    parent_kind: A\n"))
	f.Add([]byte("entities:\n  - &a {kind: A, plural: as}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, k := range tab.All() {
			if k.ParentKind != "" {
				if _, ok := tab.Get(k.ParentKind); !ok {
					t.Fatalf("kind %s has an undeclared parent", k.Kind)
				}
			}
			if got, ok := tab.ByPlural(k.Plural); !ok || got.Kind != k.Kind {
				t.Fatalf("plural %s does not lead back to %s", k.Plural, k.Kind)
			}
			_ = tab.Href(k.Kind, "id", "parent")
		}
	})
}
