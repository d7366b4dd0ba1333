//go:build integration

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/hyperfleet/hyperfleet/resource"
)

// TestTenancyForeignIDsAnswerAsRandom calls every route that takes an id,
// as the router lists it (a new route is covered without editing this
// test), with another tenant's ids and with random ones, on every example
// kind: the answers are the same problem document but for the id, and
// nothing changes. The system callers' routes (status writes, PUT
// .../tenancy) refuse a tenant with the same 403 for either. Then references to, and searches for, another tenant's
// resources. The store reads and locks within the caller's tenancy
// (apiserver/store TestScopedReadsAndLocks), so the other tenant's row is
// missing exactly as a random id is: no 403, no other detail.
func TestTenancyForeignIDsAnswerAsRandom(t *testing.T) {
	backends(t, func(t *testing.T, b string) {
		e := newEnv(t, b, withTenancy(t, gatewayTenancy, false), withExampleKinds(t))
		kinds := e.app.Kinds.All()
		theirs := tenantFixture(t, e, acme, kinds)
		ours := tenantFixture(t, e, globex, kinds)
		before := fleetSnapshot(t, e)

		calls := 0
		for _, route := range e.app.Server.Routes() {
			method, path, _ := strings.Cut(route, " ")
			if !strings.Contains(path, "{") {
				continue // lists and creates of a whole kind: TestTenancyRoutes
			}
			body, ok := probeBody(method, path, kinds)
			if !ok {
				t.Fatalf("%s: no request body for this route; teach probeBody", route)
			}
			status, code := 404, "HYPERFLEET-NTF-001"
			if method != "GET" && strings.HasSuffix(path, "/statuses") || strings.HasSuffix(path, "/tenancy") {
				// Tenants neither write statuses nor assign tenancies,
				// decided before any read.
				status, code = 403, "HYPERFLEET-AUZ-001"
			}
			for _, k := range kindsIn(t, path, kinds) {
				foreign, random := fill(t, path, k, kinds, theirs), fill(t, path, k, kinds, nil)
				got := e.as(globex, method, foreign.path, body)
				want := e.as(globex, method, random.path, body)
				want.problem(status, code)
				sameAnswer(t, route+" ("+k+")", got, foreign.ids, want, random.ids)
				calls++
			}
		}
		// At least GET, PATCH, DELETE, force-delete, /reconciliation and
		// the three of /statuses per kind, and /tenancy per kind without a
		// parent.
		roots := 0
		for _, k := range kinds {
			if k.ParentKind == "" {
				roots++
			}
		}
		if calls < 8*len(kinds)+roots {
			t.Fatalf("only %d calls of routes with ids for %d kinds: the router's list is not what this test expects", calls, len(kinds))
		}

		// A reference to another tenant's resource is a missing target.
		for _, k := range kinds {
			for _, ref := range k.References {
				target := theirs[ref.TargetKind]
				randomID := uuid.NewString()
				refs := func(id string) []map[string]any { return []map[string]any{{"ref_type": ref.RefType, "id": id}} }
				create := createBody(k.Kind, "probe-ref")
				collection := base + "/" + k.Plural
				if k.ParentKind != "" {
					collection = ours[k.ParentKind].Href + "/" + k.Plural
				}
				withRefs := func(id string) map[string]any {
					c := maps.Clone(create)
					c["references"] = refs(id)
					return c
				}
				for _, probe := range []struct {
					method, path string
					body         func(id string) map[string]any
				}{
					{"POST", collection, withRefs},
					{"PATCH", ours[k.Kind].Href, func(id string) map[string]any { return map[string]any{"references": refs(id)} }},
				} {
					got := e.as(globex, probe.method, probe.path, probe.body(target.ID))
					want := e.as(globex, probe.method, probe.path, probe.body(randomID))
					want.problem(400, "HYPERFLEET-VAL-001")
					sameAnswer(t, fmt.Sprintf("%s %s with reference %s", probe.method, probe.path, ref.RefType),
						got, map[string]string{target.ID: "{id}"}, want, map[string]string{randomID: "{id}"})
				}
			}
		}

		// Searches for another tenant's ids find nothing, as for random ones.
		for _, k := range kinds {
			searches := map[string]string{"id='%s'": theirs[k.Kind].ID}
			if k.ParentKind != "" {
				searches["owner_references.id='%s'"] = theirs[k.ParentKind].ID
			}
			randomID := uuid.NewString()
			for _, collection := range []string{base + "/" + k.Plural, base + "/resources"} {
				for s, id := range searches {
					got := e.as(globex, "GET", collection+"?search="+urlQuery(fmt.Sprintf(s, id)), nil)
					want := e.as(globex, "GET", collection+"?search="+urlQuery(fmt.Sprintf(s, randomID)), nil)
					if ids, total := listed(want); total != 0 || len(ids) != 0 {
						t.Fatalf("a search for a random id found %v", ids)
					}
					sameAnswer(t, "search "+collection+" "+s, got, map[string]string{id: "{id}"}, want, map[string]string{randomID: "{id}"})
				}
			}
		}

		if after := fleetSnapshot(t, e); after != before {
			t.Errorf("another tenant's requests changed the fleet\nbefore: %s\nafter:  %s", before, after)
		}
		// The fixture is live: its own tenant reads it.
		for _, r := range theirs {
			e.as(acme, "GET", r.Href, nil).expect(200)
		}
	})
}

// tenantFixture creates one resource of every kind as a tenant, parents
// first, and returns them by kind.
func tenantFixture(t *testing.T, e *env, who caller, kinds []resource.Kind) map[string]resource.Resource {
	t.Helper()
	out := map[string]resource.Resource{}
	for len(out) < len(kinds) {
		made := len(out)
		for _, k := range kinds {
			_, done := out[k.Kind]
			parent, parentMade := out[k.ParentKind]
			if done || k.ParentKind != "" && !parentMade {
				continue
			}
			collection := base + "/" + k.Plural
			if k.ParentKind != "" {
				collection = parent.Href + "/" + k.Plural
			}
			out[k.Kind] = e.as(who, "POST", collection, createBody(k.Kind, "scope-"+strings.ToLower(k.Kind))).expect(201).resource()
		}
		if len(out) == made {
			t.Fatalf("kinds whose parents cannot be created: %+v", kinds)
		}
	}
	return out
}

func createBody(kind, name string) map[string]any {
	if len(name) > 15 {
		name = name[:15] // the example node pools' name_max_len
	}
	return map[string]any{"kind": kind, "name": name, "spec": map[string]any{}, "labels": map[string]string{"probe": "scope"}}
}

// probeBody is a valid request body for a route, so that the lookup, not
// the body's validation, decides the answer.
func probeBody(method, path string, kinds []resource.Kind) (any, bool) {
	last := path[strings.LastIndex(path, "/")+1:]
	switch {
	case method == "GET" || method == "DELETE":
		return nil, true
	case last == "statuses":
		return report("validation", 1, "True"), true
	case last == "force-delete":
		return map[string]any{"reason": "probe"}, true
	case last == "tenancy":
		return map[string]string{"org": "globex"}, true
	case method == "PATCH":
		return map[string]any{"labels": map[string]string{"probe": "patched"}}, true
	case method == "POST":
		for _, k := range kinds {
			if k.Plural == last {
				return createBody(k.Kind, "probe-"+strings.ToLower(k.Kind)), true
			}
		}
	}
	return nil, false
}

// kindsIn lists the kinds a route is called for: the kind whose id it
// takes last, or every kind for /resources/{resource_id}.
func kindsIn(t *testing.T, path string, kinds []resource.Kind) []string {
	t.Helper()
	if strings.Contains(path, "{resource_id}") {
		var all []string
		for _, k := range kinds {
			all = append(all, k.Kind)
		}
		return all
	}
	var last string
	for _, k := range kinds {
		if i := strings.LastIndex(path, "{"+idParamOf(k.Kind)+"}"); i >= 0 && (last == "" || i > strings.LastIndex(path, "{"+idParamOf(last)+"}")) {
			last = k.Kind
		}
	}
	if last == "" {
		t.Fatalf("%s: no kind's id parameter; teach kindsIn", path)
	}
	return []string{last}
}

func idParamOf(kind string) string { return strings.ToLower(kind) + "_id" }

// filled is a route's path with its parameters set, and which id stands
// for which parameter.
type filled struct {
	path string
	ids  map[string]string // id -> "{parameter}"
}

// fill sets a route's parameters to the ids of the fixture's resources
// (kind k for {resource_id}), or to random ids when fixture is nil.
func fill(t *testing.T, path, k string, kinds []resource.Kind, fixture map[string]resource.Resource) filled {
	t.Helper()
	f := filled{path: path, ids: map[string]string{}}
	for strings.Contains(f.path, "{") {
		i := strings.Index(f.path, "{")
		j := i + strings.Index(f.path[i:], "}")
		param := f.path[i : j+1]
		kind := ""
		for _, kd := range kinds {
			if "{"+idParamOf(kd.Kind)+"}" == param {
				kind = kd.Kind
			}
		}
		if param == "{resource_id}" {
			kind = k
		}
		if kind == "" {
			t.Fatalf("%s: parameter %s names no kind; teach fill", path, param)
		}
		id := uuid.NewString()
		if fixture != nil {
			id = fixture[kind].ID
		}
		f.ids[id] = param
		f.path = f.path[:i] + id + f.path[j+1:]
	}
	return f
}

// sameAnswer compares two answers with their ids replaced by the
// parameters they stand for, the timestamp aside.
func sameAnswer(t *testing.T, what string, got *response, gotIDs map[string]string, want *response, wantIDs map[string]string) {
	t.Helper()
	norm := func(r *response, ids map[string]string) string {
		body := string(r.body)
		for id, param := range ids {
			body = strings.ReplaceAll(body, id, param)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("%s: %d %s: %v", what, r.status, r.body, err)
		}
		delete(doc, "timestamp")
		out, _ := json.Marshal(doc)
		return fmt.Sprintf("%d %s %s", r.status, r.header.Get("Content-Type"), out)
	}
	if g, w := norm(got, gotIDs), norm(want, wantIDs); g != w {
		t.Errorf("%s: another tenant's ids answer\n  %s\nrandom ids answer\n  %s", what, g, w)
	}
}

// fleetSnapshot is every resource as a system caller reads it, with its
// statuses, and the outbox: what a write would change.
func fleetSnapshot(t *testing.T, e *env) string {
	t.Helper()
	var b strings.Builder
	var list struct {
		Items []resource.Resource `json:"items"`
	}
	e.as(system, "GET", base+"/resources?size=100", nil).expect(200).into(&list)
	for _, r := range list.Items {
		fmt.Fprintf(&b, "%s\n%s\n", e.as(system, "GET", r.Href, nil).expect(200).body, e.as(system, "GET", r.Href+"/statuses", nil).expect(200).body)
	}
	pending, err := e.app.Store.PendingOutbox(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%d resources, %d outbox rows", len(list.Items), len(pending))
	return b.String()
}
