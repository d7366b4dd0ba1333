package apiserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestParseAdapterList(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  string
	}{
		{`["validation","landing-zone"]`, "validation|landing-zone", ""},
		{`validation, landing-zone`, "validation|landing-zone", ""},
		{`[]`, "", ""},
		{``, "", ""},
		{`[`, "", "JSON array"},
		{`[1]`, "", "JSON array"},
		{`a,,b`, "", "empty"},
		{`a,a`, "", "twice"},
	}
	for _, tc := range tests {
		got, err := ParseAdapterList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAdapterList(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != tc.want {
			t.Errorf("ParseAdapterList(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestGinPathToOpenAPI(t *testing.T) {
	if got := ginPathToOpenAPI("/clusters/:cluster_id/nodepools/:nodepool_id/statuses"); got != "/clusters/{cluster_id}/nodepools/{nodepool_id}/statuses" {
		t.Errorf("got %s", got)
	}
}

func TestRegistration(t *testing.T) {
	kinds, err := resource.NewKinds("", []resource.Kind{
		{Kind: "Cluster", Plural: "clusters"},
		{Kind: "WifConfig", Plural: "wifconfigs", RequiredAdapters: []string{"wif"}, OptionalAdapters: []string{"audit"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Registration(kinds, map[string][]string{"Cluster": {"validation"}}, nil)
	if err != nil || strings.Join(got.Required["Cluster"], ",") != "validation" || strings.Join(got.Required["WifConfig"], ",") != "wif" ||
		strings.Join(got.Optional["WifConfig"], ",") != "audit" || got.Optional["Cluster"] != nil {
		t.Fatalf("Registration = %+v, %v", got, err)
	}
	// The variables override the table.
	got, _ = Registration(kinds, map[string][]string{"Cluster": {}, "WifConfig": {"other"}}, map[string][]string{"WifConfig": {}, "Cluster": {"cost"}})
	if strings.Join(got.Required["WifConfig"], ",") != "other" || len(got.Optional["WifConfig"]) != 0 || strings.Join(got.Optional["Cluster"], ",") != "cost" {
		t.Fatalf("override ignored: %+v", got)
	}
	// A built-in table (no kinds file) without a decision stops start-up.
	if _, err := Registration(kinds, nil, nil); err == nil || !strings.Contains(err.Error(), "HYPERFLEET_CLUSTER_ADAPTERS is not set") {
		t.Fatalf("unset Cluster adapters: %v", err)
	}
	if _, err := Registration(kinds, map[string][]string{"Cluster": {}, "NodePool": {}}, nil); err == nil || !strings.Contains(err.Error(), "kind NodePool, which is not in the kinds table") {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := Registration(kinds, map[string][]string{"Cluster": {}}, map[string][]string{"Pool": {"a"}}); err == nil || !strings.Contains(err.Error(), "kind Pool") {
		t.Fatalf("optional adapters of an unknown kind: %v", err)
	}
	// An adapter cannot be both: readiness waits for it or it does not.
	_, err = Registration(kinds, map[string][]string{"Cluster": {}, "WifConfig": {"audit"}}, nil)
	if err == nil || !strings.Contains(err.Error(), `adapter "audit" of kind WifConfig is both required (HYPERFLEET_WIFCONFIG_ADAPTERS) and optional (optional_adapters in `) {
		t.Fatalf("required and optional: %v", err)
	}
}

// Upstream's entities block declares kinds without required_adapters: a
// kinds file's kind with neither the field nor the variable has none.
func TestRegistrationOfAKindsFileWithoutRequiredAdapters(t *testing.T) {
	kinds, err := resource.NewKinds("kinds.yaml", []resource.Kind{
		{Kind: "Cluster", Plural: "clusters", RequiredAdapters: []string{"validation"}},
		{Kind: "Channel", Plural: "channels"},
		{Kind: "WifConfig", Plural: "wifconfigs", OptionalAdapters: []string{"audit"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Registration(kinds, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Required["Channel"] == nil || len(got.Required["Channel"]) != 0 || len(got.Required["WifConfig"]) != 0 ||
		strings.Join(got.Optional["WifConfig"], ",") != "audit" || strings.Join(got.Required["Cluster"], ",") != "validation" {
		t.Fatalf("Registration = %+v", got)
	}
	// The start-up log says what that means for readiness, per kind.
	var buf bytes.Buffer
	got.log(zerolog.New(&buf))
	out := buf.String()
	for _, want := range []string{
		`"kind":"Channel"`, `Channel has no required adapters: its resources are stored and served but never become Ready or Reconciled`,
		`"source":"no required_adapters in kinds.yaml and no HYPERFLEET_CHANNEL_ADAPTERS"`,
		`WifConfig has optional adapters: they run every round and report, but never decide Ready, Reconciled or removal`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"kind":"Cluster"`) {
		t.Errorf("a kind with required adapters is logged:\n%s", out)
	}
}
