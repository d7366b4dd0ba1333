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
