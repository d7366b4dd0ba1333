package api

import (
	"strings"
	"testing"
)

// References of the example kinds: a Version names a Channel, a Cluster its
// WifConfig. Targets must exist and not be deleting, counts stay within
// min and max, and a referenced resource cannot be deleted while a live
// resource links to it.
func TestReferencesOfExampleKinds(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		stable := e.do("POST", base+"/channels", map[string]any{"kind": "Channel", "name": "stable", "spec": map[string]any{}}).expect(201).resource()
		fast := e.do("POST", base+"/channels", map[string]any{"kind": "Channel", "name": "fast", "spec": map[string]any{}}).expect(201).resource()
		version := func(name string, refs ...map[string]any) map[string]any {
			return map[string]any{"kind": "Version", "name": name, "spec": map[string]any{}, "references": refs}
		}
		channelRef := func(id string) map[string]any { return map[string]any{"ref_type": "channel", "id": id} }

		// A version under stable that was promoted from fast.
		v := e.do("POST", stable.Href+"/versions", version("v4-17", channelRef(fast.ID))).expect(201).resource()
		if len(v.References) != 1 || v.References[0].RefType != "channel" || v.References[0].Kind != "Channel" ||
			v.References[0].ID != fast.ID || v.References[0].Href != fast.Href {
			t.Fatalf("created references %+v", v.References)
		}
		if got := e.do("GET", v.Href, nil).expect(200).resource(); len(got.References) != 1 || got.References[0].Href != fast.Href {
			t.Fatalf("stored references %+v", got.References)
		}

		// Missing target, unknown type, too many, no id: 400 naming the reference.
		p := e.do("POST", stable.Href+"/versions", version("v-missing", channelRef("00000000-0000-7000-8000-000000000000"))).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("references[0].id") || !strings.Contains(p.Errors[0].Message, "channel") || !strings.Contains(p.Errors[0].Message, "does not exist") {
			t.Fatalf("missing target: %+v", p)
		}
		p = e.do("POST", stable.Href+"/versions", version("v-unknown", map[string]any{"ref_type": "cluster", "id": fast.ID})).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("references[0].ref_type") {
			t.Fatalf("unknown ref_type: %+v", p)
		}
		p = e.do("POST", stable.Href+"/versions", version("v-two", channelRef(fast.ID), channelRef(stable.ID))).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("references") || !strings.Contains(p.Errors[0].Message, "0 to 1") {
			t.Fatalf("max: %+v", p)
		}
		e.do("POST", stable.Href+"/versions", version("v-noid", map[string]any{"ref_type": "channel"})).problem(400, "HYPERFLEET-VAL-001")
		// A reference to a resource of another kind is as missing.
		e.do("POST", stable.Href+"/versions", version("v-wrong", channelRef(v.ID))).problem(400, "HYPERFLEET-VAL-001")
		// A kind that declares none takes none.
		e.do("POST", base+"/channels", map[string]any{"kind": "Channel", "name": "candidate", "spec": map[string]any{},
			"references": []any{channelRef(fast.ID)}}).problem(400, "HYPERFLEET-VAL-001")

		// fast is referenced by a version of another channel: DELETE and
		// the version's name and id are in the 409.
		p = e.do("DELETE", fast.Href, nil).problem(409, "HYPERFLEET-CNF-005")
		if !strings.Contains(p.Detail, "v4-17") || !strings.Contains(p.Detail, v.ID) {
			t.Fatalf("referenced detail %q does not name the version", p.Detail)
		}
		if got := e.do("GET", fast.Href, nil).expect(200).resource(); got.DeletedTime != nil {
			t.Fatal("a refused delete marked the channel deleting")
		}
		// A PATCH that drops the link bumps the generation and frees fast.
		got := e.do("PATCH", v.Href, map[string]any{"references": []any{}}).expect(200).resource()
		if got.Generation != 2 || len(got.References) != 0 {
			t.Fatalf("patched version %+v", got)
		}
		// Same links again: nothing changes.
		if got := e.do("PATCH", v.Href, map[string]any{"references": []any{}}).expect(200).resource(); got.Generation != 2 {
			t.Fatalf("no-op PATCH bumped generation to %d", got.Generation)
		}
		e.do("PATCH", v.Href, map[string]any{"references": []any{channelRef("00000000-0000-7000-8000-000000000000")}}).problem(400, "HYPERFLEET-VAL-001")
		e.do("DELETE", fast.Href, nil).expect(202)
		e.do("GET", fast.Href, nil).problem(404, "HYPERFLEET-NTF-001")

		// A version naming its own channel does not hold that channel once
		// the version itself is gone; the restrict rule still orders them.
		got = e.do("PATCH", v.Href, map[string]any{"references": []any{channelRef(stable.ID)}}).expect(200).resource()
		if got.Generation != 3 || got.References[0].ID != stable.ID {
			t.Fatalf("re-linked version %+v", got)
		}
		e.do("DELETE", stable.Href, nil).problem(409, "HYPERFLEET-CNF-004")
		e.do("DELETE", v.Href, nil).expect(202)
		e.do("DELETE", stable.Href, nil).expect(202)

		// Cluster -> WifConfig: the cluster's adapters make it linger while
		// deleting, and the deleting cluster holds its WifConfig until it is
		// removed (its adapters may need it to clean up, and its link would
		// otherwise name a resource that is gone).
		wif := e.do("POST", base+"/wifconfigs", map[string]any{"kind": "WifConfig", "name": "wif-prod", "spec": map[string]any{}}).expect(201).resource()
		body := clusterBody("prod")
		body["references"] = []any{map[string]any{"ref_type": "wif_config", "id": wif.ID}}
		c := e.do("POST", base+"/clusters", body).expect(201).resource()
		if len(c.References) != 1 || c.References[0].Href != wif.Href {
			t.Fatalf("cluster references %+v", c.References)
		}
		e.do("DELETE", wif.Href, nil).problem(409, "HYPERFLEET-CNF-005")
		e.do("DELETE", c.Href, nil).expect(202)
		deleting := e.do("GET", c.Href, nil).expect(200).resource()
		if deleting.DeletedTime == nil {
			t.Fatal("cluster not deleting")
		}
		p = e.do("DELETE", wif.Href, nil).problem(409, "HYPERFLEET-CNF-005")
		if !strings.Contains(p.Detail, c.ID+", being deleted") || !strings.Contains(p.Detail, "holds it until it is removed") {
			t.Fatalf("deleting referrer detail %q", p.Detail)
		}
		if got := e.do("GET", wif.Href, nil).expect(200).resource(); got.DeletedTime != nil {
			t.Fatal("a refused delete marked the WifConfig deleting")
		}
		// Once the cluster's adapters have finalized it is removed, and the
		// WifConfig can go.
		for _, adapter := range []string{"validation", "landing-zone"} {
			e.report(deleting, report(adapter, deleting.Generation, "True", "Finalized", "True")).expect(201)
		}
		e.do("GET", c.Href, nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("DELETE", wif.Href, nil).expect(202)
		e.do("GET", wif.Href, nil).problem(404, "HYPERFLEET-NTF-001")
	}, withExampleKinds(t))
}

// min is enforced on create and PATCH; a target being deleted cannot gain
// a new link (409); a subtree whose member is referenced from outside
// cannot be deleted, while links inside the subtree do not hold it.
func TestReferenceRules(t *testing.T) {
	const kinds = `
entities:
  - {kind: Cluster, plural: clusters, required_adapters: [cluster-adapter]}
  - {kind: NodePool, plural: nodepools, parent_kind: Cluster, required_adapters: []}
  - kind: Addon
    plural: addons
    required_adapters: []
    references:
      - {ref_type: cluster, target_kind: Cluster, min: 1, max: 2}
      - {ref_type: pool, target_kind: NodePool, min: 0}
`
	eachBackend(t, func(t *testing.T, e *env) {
		addon := func(name string, refs ...map[string]any) map[string]any {
			return map[string]any{"kind": "Addon", "name": name, "spec": map[string]any{}, "references": refs}
		}
		ref := func(typ, id string) map[string]any { return map[string]any{"ref_type": typ, "id": id} }
		c1 := e.createCluster("one")
		c2 := e.createCluster("two")
		pool := e.createNodePool(c1.ID, "pool")

		p := e.do("POST", base+"/addons", addon("bare")).problem(400, "HYPERFLEET-VAL-001")
		if !p.names("references") || !strings.Contains(p.Errors[0].Message, "cluster") {
			t.Fatalf("min: %+v", p)
		}
		a := e.do("POST", base+"/addons", addon("logging", ref("cluster", c2.ID), ref("pool", pool.ID))).expect(201).resource()
		if len(a.References) != 2 || a.References[1].Href != pool.Href {
			t.Fatalf("addon references %+v", a.References)
		}
		e.do("PATCH", a.Href, map[string]any{"references": []any{}}).problem(400, "HYPERFLEET-VAL-001")
		e.do("PATCH", a.Href, map[string]any{"references": []any{ref("cluster", c1.ID), ref("cluster", c1.ID)}}).problem(400, "HYPERFLEET-VAL-001")

		// c1's node pool is referenced: deleting c1 would cascade to it.
		p = e.do("DELETE", c1.Href, nil).problem(409, "HYPERFLEET-CNF-005")
		if !strings.Contains(p.Detail, "logging") {
			t.Fatalf("subtree referrer detail %q", p.Detail)
		}
		// Deleting: c2 has an adapter, so it stays, deleting; no new links.
		e.do("PATCH", a.Href, map[string]any{"references": []any{ref("cluster", c1.ID)}}).expect(200)
		e.do("DELETE", c2.Href, nil).expect(202)
		p = e.do("POST", base+"/addons", addon("metrics", ref("cluster", c2.ID))).problem(409, "HYPERFLEET-CNF-002")
		if !strings.Contains(p.Detail, "cluster") || !strings.Contains(p.Detail, c2.ID) {
			t.Fatalf("deleting target detail %q", p.Detail)
		}
		e.do("PATCH", a.Href, map[string]any{"references": []any{ref("cluster", c2.ID)}}).problem(409, "HYPERFLEET-CNF-002")
		// Once the addon is gone, c1 can go.
		e.do("DELETE", a.Href, nil).expect(202)
		e.do("DELETE", c1.Href, nil).expect(202)
	}, withKinds(t, kinds))
}
