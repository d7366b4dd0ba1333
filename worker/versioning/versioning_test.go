package versioning

import (
	"strings"
	"testing"
)

func TestVersionValidate(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		want string // "" accepts
	}{
		{Version{Deployment: "hyperfleet-reconciler", BuildID: "v1.4.2"}, ""},
		{Version{Deployment: "hyperfleet-reconciler"}, ""}, // unversioned
		{Version{Deployment: "d", BuildID: "a:b"}, "--build-id"},
		{Version{Deployment: "a:b", BuildID: "v1"}, "--deployment-name"},
		{Version{Deployment: "d", BuildID: " v1"}, "--build-id"},
		{Version{Deployment: "d", BuildID: strings.Repeat("x", 256)}, "255"},
		{Version{Deployment: "d", BuildID: "__unversioned__"}, "reserved"},
	} {
		err := tc.v.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.v, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one naming %q", tc.v, err, tc.want)
		}
	}
}

func TestVersionString(t *testing.T) {
	v := Version{Deployment: "hyperfleet-reconciler", BuildID: "v2"}
	if v.String() != "hyperfleet-reconciler:v2" || !v.Versioned() || (Version{Deployment: "d"}).Versioned() {
		t.Errorf("String %q, Versioned %t", v, v.Versioned())
	}
	if q := pinnedQuery(v); !strings.Contains(q, "TemporalWorkerDeploymentVersion = 'hyperfleet-reconciler:v2'") ||
		!strings.Contains(q, "ExecutionStatus = 'Running'") || !strings.Contains(q, "WorkflowType = 'ReconcileResource'") {
		t.Errorf("pinned query %q", q)
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		err  bool
	}{
		{"", PromoteFirst, false}, // the default
		{"new", PromoteNew, false},
		{"true", PromoteNew, false}, // the flag's boolean form before policies
		{" First ", PromoteFirst, false},
		{"never", PromoteNever, false},
		{"false", PromoteNever, false},
		{"always", "", true},
		{"1", "", true},
	} {
		got, err := ParsePolicy(tc.in)
		switch {
		case tc.err && (err == nil || !strings.Contains(err.Error(), "--promote")):
			t.Errorf("ParsePolicy(%q) = %q, %v; want an error naming --promote", tc.in, got, err)
		case !tc.err && (err != nil || got != tc.want):
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
