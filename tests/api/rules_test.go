package api

import (
	"context"
	"strings"
	"testing"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/conditionrules"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource/kindsfile"
)

const rulesKinds = `
entities:
  - kind: Cluster
    plural: clusters
    required_adapters: [validation, landing-zone]
    conditions:
      - type: LandingZoneReady
        expression: >-
          statuses.exists(s, s.adapter == "landing-zone" && s.observed_generation == generation
            && s.conditions.exists(c, c.type == "NamespaceReady" && c.status == "True"))
        reason: NamespaceReady
        message: The landing zone's namespace is ready
      - type: Broken
        expression: statuses[0].data.missing == 1
`

// A kind's condition rules add conditions of their own, evaluated with
// the aggregation of every report (and every generation bump); a rule that
// fails at run time is False with reason RuleError, never a failed report.
func TestConditionRules(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("rules")
		if got := cond(c, "LandingZoneReady"); got != "False/RuleNotSatisfied/1" {
			t.Fatalf("new cluster LandingZoneReady = %s", got)
		}
		if got := cond(c, "Broken"); !strings.HasPrefix(got, "False/RuleError/") {
			t.Fatalf("new cluster Broken = %s", got)
		}
		e.report(c, report("landing-zone", 1, "True", "NamespaceReady", "False")).expect(201)
		e.expectCond(c.ID, "LandingZoneReady", "False/RuleNotSatisfied/1")
		e.report(c, report("landing-zone", 1, "True", "NamespaceReady", "True")).expect(201)
		got := e.expectCond(c.ID, "LandingZoneReady", "True/NamespaceReady/1")
		if lz, _ := got.Condition("LandingZoneReady"); lz.Message != "The landing zone's namespace is ready" {
			t.Fatalf("rule message %q", lz.Message)
		}
		// The fixed conditions are unchanged by the rules.
		e.expectCond(c.ID, "Ready", "False/AdaptersReconciling/1")
		// A new generation: the report at generation 1 no longer satisfies it.
		e.do("PATCH", c.Href, `{"spec":{"nodes":3}}`).expect(200)
		e.expectCond(c.ID, "LandingZoneReady", "False/RuleNotSatisfied/2")
		if got := cond(e.getCluster(c.ID), "Broken"); !strings.HasPrefix(got, "False/RuleError/") {
			t.Fatalf("Broken = %s", got)
		}
	}, withKinds(t, rulesKinds))
}

// A rule that does not compile, or does not yield a bool, stops start-up
// with the file and line.
func TestConditionRulesRefuseBadExpressions(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"syntax": {`
entities:
  - kind: Cluster
    plural: clusters
    conditions:
      - type: Odd
        expression: statuses.exists(s,
`, "kinds.yaml:6: condition Odd of kind Cluster"},
		"not bool": {`
entities:
  - kind: Cluster
    plural: clusters
    conditions:
      - type: Count
        expression: size(statuses)
`, "yields int, not bool"},
		"unknown variable": {`
entities:
  - kind: Cluster
    plural: clusters
    conditions:
      - type: Odd
        expression: cluster.spec.nodes > 1
`, "undeclared reference"},
	} {
		t.Run(name, func(t *testing.T) {
			tab, err := kindsfile.Parse("kinds.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = conditionrules.Compile("kinds.yaml", tab.Kinds)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("compile error %v, want it to contain %q", err, c.want)
			}
			// The API refuses to start with it, before touching the database.
			_, err = apiserver.Build(context.Background(), apiserver.Options{Kinds: tab.Kinds,
				Registered: map[string][]string{"Cluster": {"validation"}},
				Store:      store.Config{Driver: store.BackendSQLite, URL: t.TempDir() + "/db.sqlite"}})
			if err == nil || !strings.Contains(err.Error(), "condition") {
				t.Fatalf("Build error %v, want the condition rule named", err)
			}
		})
	}
}
