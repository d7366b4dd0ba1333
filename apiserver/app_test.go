package apiserver

import (
	"strings"
	"testing"

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
		{Kind: "WifConfig", Plural: "wifconfigs", RequiredAdapters: []string{"wif"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Registration(kinds, map[string][]string{"Cluster": {"validation"}})
	if err != nil || strings.Join(got["Cluster"], ",") != "validation" || strings.Join(got["WifConfig"], ",") != "wif" {
		t.Fatalf("Registration = %v, %v", got, err)
	}
	// The variable overrides the file.
	if got, _ := Registration(kinds, map[string][]string{"Cluster": {}, "WifConfig": {"other"}}); strings.Join(got["WifConfig"], ",") != "other" {
		t.Fatalf("override ignored: %v", got)
	}
	if _, err := Registration(kinds, nil); err == nil || !strings.Contains(err.Error(), "HYPERFLEET_CLUSTER_ADAPTERS is not set") {
		t.Fatalf("unset Cluster adapters: %v", err)
	}
	if _, err := Registration(kinds, map[string][]string{"Cluster": {}, "NodePool": {}}); err == nil || !strings.Contains(err.Error(), "kind NodePool, which is not in the kinds table") {
		t.Fatalf("unknown kind: %v", err)
	}
}
