package resource

import (
	"strings"
	"testing"
)

func TestRefValidate(t *testing.T) {
	id := "019b0a1e-7c2a-7d3e-9f00-1234567890ab"
	cases := []struct {
		name    string
		ref     Ref
		wantErr string
	}{
		{"a cluster", Ref{Kind: KindCluster, ID: id}, ""},
		{"a node pool", Ref{Kind: KindNodePool, ID: id, ParentID: "c1"}, ""},
		{"a kind with its path", Ref{Kind: "Patch", ID: "p1", ParentID: "v1", ParentKind: "Version", Path: BasePath + "/versions/v1/patches/p1"}, ""},
		{"another origin in the path", Ref{Kind: KindCluster, ID: "evil", Path: "http://127.0.0.1:8350/steal"}, "not under"},
		{"a path to another resource", Ref{Kind: KindCluster, ID: "c1", Path: BasePath + "/clusters/c2"}, "not the resource's id"},
		{"a path up the tree", Ref{Kind: KindCluster, ID: "c1", Path: BasePath + "/../../admin/c1"}, "plural"},
		{"a child's path under another parent", Ref{Kind: "Patch", ID: "p1", ParentID: "v1", Path: BasePath + "/versions/v2/patches/p1"}, "parent"},
		{"a path with a query", Ref{Kind: KindCluster, ID: "c1", Path: BasePath + "/clusters/c1?x=1"}, "id"},
		{"an id with a slash", Ref{Kind: KindCluster, ID: "a/b"}, "not a resource id"},
		{"an empty id", Ref{Kind: KindCluster}, "not a resource id"},
		{"a lowercase kind", Ref{Kind: "cluster", ID: "c1"}, "not a kind name"},
		{"a parent id with a scheme", Ref{Kind: KindNodePool, ID: "n1", ParentID: "http://x"}, "parent id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.ref.Validate()
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Validate() = %v, want an error saying %q", err, c.wantErr)
			}
		})
	}
}

func FuzzRefValidate(f *testing.F) {
	f.Add("Cluster", "c1", "", "", "")
	f.Add("Patch", "p1", "v1", "Version", BasePath+"/versions/v1/patches/p1")
	f.Add("Cluster", "evil", "", "", "http://127.0.0.1:8350/steal")
	f.Fuzz(func(t *testing.T, kind, id, parentID, parentKind, path string) {
		ref := Ref{Kind: kind, ID: id, ParentID: parentID, ParentKind: parentKind, Path: path}
		if ref.Validate() != nil {
			return
		}
		// What passes names the API's own path of the resource.
		href := ref.Href()
		if !strings.HasPrefix(href, BasePath+"/") || strings.ContainsAny(href, "?#:@%\\ ") {
			t.Fatalf("Validate passed %+v, whose href %q leaves the API", ref, href)
		}
		for _, seg := range strings.Split(href, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("Validate passed %+v, whose href %q climbs out of the API", ref, href)
			}
		}
	})
}
