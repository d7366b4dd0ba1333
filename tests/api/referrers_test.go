//go:build integration

package api

import (
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Contract: references.<ref_type>.id and references.id find the
// resources that link to a target, in lists, in the list across kinds
// and in watches; a ref_type the kind does not declare is a 400.
func TestSearchReferrers(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		wif := func(name string) resource.Resource {
			return e.do("POST", base+"/wifconfigs", map[string]any{"kind": "WifConfig", "name": name, "spec": map[string]any{}}).expect(201).resource()
		}
		w1, w2 := wif("wif-one"), wif("wif-two")
		cluster := func(name string, target string) resource.Resource {
			body := clusterBody(name)
			if target != "" {
				body["references"] = []any{map[string]any{"ref_type": "wif_config", "id": target}}
			}
			return e.do("POST", base+"/clusters", body).expect(201).resource()
		}
		a, _, c, d := cluster("ref-a", w1.ID), cluster("ref-b", w2.ID), cluster("ref-c", w1.ID), cluster("ref-d", "")
		names := func(path, query string) []string {
			t.Helper()
			var l list
			e.do("GET", path+"?orderBy=name&search="+urlQuery(query), nil).expect(200).into(&l)
			out := []string{}
			for _, r := range l.Items {
				out = append(out, r.Name)
			}
			if int(l.Total) != len(out) {
				t.Errorf("%s %q: total %d for %d items", path, query, l.Total, len(out))
			}
			return out
		}
		for _, c := range []struct {
			path, query string
			want        []string
		}{
			{base + "/clusters", "references.wif_config.id = '" + w1.ID + "'", []string{"ref-a", "ref-c"}},
			{base + "/clusters", "references.id = '" + w2.ID + "'", []string{"ref-b"}},
			{base + "/clusters", "references.wif_config.id in ('" + w1.ID + "', '" + w2.ID + "')", []string{"ref-a", "ref-b", "ref-c"}},
			{base + "/clusters", "references.wif_config.id != '" + w1.ID + "'", []string{"ref-b", "ref-d"}},
			{base + "/clusters", "references.wif_config.id = '" + w1.ID + "' and name != 'ref-a'", []string{"ref-c"}},
			{base + "/resources", "references.id = '" + w1.ID + "'", []string{"ref-a", "ref-c"}},
			{base + "/clusters", "references.wif_config.id = '" + d.ID + "'", []string{}},
		} {
			if got := names(c.path, c.query); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("%s %q = %v, want %v", c.path, c.query, got, c.want)
			}
		}
		p := e.do("GET", base+"/clusters?search="+urlQuery("references.channel.id = 'x'"), nil).problem(400, "HYPERFLEET-VAL-004")
		if !p.names("search") || !strings.Contains(p.Detail, "wif_config") {
			t.Errorf("undeclared ref_type: %+v", p)
		}
		e.do("GET", base+"/wifconfigs?search="+urlQuery("references.id = 'x'"), nil).problem(400, "HYPERFLEET-VAL-004")

		// A watch with the search: the cluster that starts linking to w2
		// is sent; a change of one that links elsewhere is not.
		s := e.watch(nil, base+"/clusters?watch=true&search="+urlQuery("references.wif_config.id = '"+w2.ID+"'"), nil)
		e.do("PATCH", a.Href, map[string]any{"labels": map[string]string{"x": "y"}}).expect(200)
		e.do("PATCH", d.Href, map[string]any{"references": []any{map[string]any{"ref_type": "wif_config", "id": w2.ID}}}).expect(200)
		expectChange(t, s.change(), store.ChangeModified, d.ID, 0)
		s.quiet(300 * time.Millisecond)

		// Dropping a link takes the resource out of the referrers.
		e.do("PATCH", c.Href, map[string]any{"references": []any{}}).expect(200)
		if got := names(base+"/clusters", "references.wif_config.id = '"+w1.ID+"'"); strings.Join(got, ",") != "ref-a" {
			t.Errorf("after ref-c dropped its link: %v", got)
		}
	}, withExampleKinds(t))
}
