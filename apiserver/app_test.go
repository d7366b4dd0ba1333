package apiserver

import (
	"strings"
	"testing"
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
