package api

import (
	"testing"

	"github.com/hyperfleet/hyperfleet/resource"
)

// /resources lists every kind at once, with kind searchable, and gets any
// resource by id with the href of its own kind.
func TestResourcesAcrossKinds(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("across")
		np := e.createNodePool(c.ID, "pool")
		ch := e.do("POST", base+"/channels", map[string]any{"kind": "Channel", "name": "stable", "spec": map[string]any{}}).expect(201).resource()
		v := e.do("POST", ch.Href+"/versions", map[string]any{"kind": "Version", "name": "v4-17", "spec": map[string]any{}}).expect(201).resource()

		var list resource.List[resource.Resource]
		e.do("GET", base+"/resources", nil).expect(200).into(&list)
		if list.Kind != "ResourceList" || list.Total != 4 || len(list.Items) != 4 {
			t.Fatalf("all resources: %+v", list)
		}
		kinds := map[string]string{}
		for _, r := range list.Items {
			kinds[r.ID] = r.Kind
		}
		if kinds[c.ID] != "Cluster" || kinds[np.ID] != "NodePool" || kinds[ch.ID] != "Channel" || kinds[v.ID] != "Version" {
			t.Fatalf("kinds %v", kinds)
		}
		e.do("GET", base+"/resources?search="+urlQuery("kind in ('Version','NodePool')")+"&orderBy=name&order=asc", nil).expect(200).into(&list)
		if list.Total != 2 || list.Items[0].ID != np.ID || list.Items[1].ID != v.ID {
			t.Fatalf("search by kind: %+v", list)
		}
		e.do("GET", base+"/resources?search="+urlQuery("owner_references.id='"+ch.ID+"'"), nil).expect(200).into(&list)
		if list.Total != 1 || list.Items[0].ID != v.ID {
			t.Fatalf("children of the channel: %+v", list)
		}
		// kind is searchable only here: a list of one kind refuses it.
		e.do("GET", base+"/clusters?search="+urlQuery("kind='Cluster'"), nil).problem(400, "HYPERFLEET-VAL-004")
		e.do("GET", base+"/resources?search="+urlQuery("kind=="), nil).problem(400, "HYPERFLEET-VAL-004")

		for _, want := range []resource.Resource{c, np, v} {
			got := e.do("GET", base+"/resources/"+want.ID, nil).expect(200).resource()
			if got.Kind != want.Kind || got.Href != want.Href || got.Name != want.Name {
				t.Fatalf("get %s by id: %+v", want.Kind, got)
			}
		}
		e.do("GET", base+"/resources/00000000-0000-7000-8000-000000000000", nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("GET", base+"/resources/not-an-id", nil).problem(404, "HYPERFLEET-NTF-001")
	}, withExampleKinds(t))
}
