package api

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const costKinds = `
entities:
  - kind: Cluster
    plural: clusters
    required_adapters: [validation, landing-zone]
    conditions:
      - type: NoStrangers
        expression: statuses.all(s, s.adapter in ["validation", "landing-zone"])
      - type: NoNeedle
        expression: >-
          statuses.all(s, !has(s.data.items) || s.data.items.all(i, i != "needle"))
      - type: NoDuplicates
        expression: >-
          statuses.all(s, !has(s.data.items) || s.data.items.all(i, s.data.items.exists_one(j, j == i)))
`

// Condition rules are bounded: a report of an adapter that is not
// registered for the kind never reaches them (any caller may report under
// any name), and a rule whose work over a registered report's data exceeds
// the cost limit is False with RuleError naming the limit, while the
// report itself is stored (201) and the next report is evaluated afresh.
func TestRuleCostLimitAndUnregisteredReports(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		c := e.createCluster("costly")
		e.expectCond(c.ID, "NoStrangers", "True/RuleSatisfied/1")

		items := make([]string, 1500)
		for i := range items {
			items[i] = fmt.Sprintf("i%d", i)
		}
		withItems := func(adapter string, items []string) map[string]any {
			body := report(adapter, 1, "True")
			body["data"] = map[string]any{"items": items}
			return body
		}
		// A stranger's report with a needle: stored and listed, invisible
		// to every rule.
		e.report(c, withItems("intruder", append(items[:10:10], "needle"))).expect(201)
		if got := e.statusOf(c, "intruder"); got.Adapter != "intruder" {
			t.Fatalf("the stranger's report is not listed: %+v", got)
		}
		e.expectCond(c.ID, "NoStrangers", "True/RuleSatisfied/1")
		e.expectCond(c.ID, "NoNeedle", "True/RuleSatisfied/1")

		// A registered adapter's 1,500 items: NoNeedle costs about 10,000,
		// NoDuplicates (every item against every other) millions.
		start := time.Now()
		e.report(c, withItems("validation", items)).expect(201)
		t.Logf("%s: the report whose rule exceeded the cost limit was answered in %v", e.backend, time.Since(start))
		e.expectCond(c.ID, "NoNeedle", "True/RuleSatisfied/1")
		got := e.getCluster(c.ID)
		if cond(got, "NoDuplicates") != "False/RuleError/1" {
			t.Fatalf("NoDuplicates = %s, want False/RuleError/1", cond(got, "NoDuplicates"))
		}
		if dup, _ := got.Condition("NoDuplicates"); !strings.Contains(dup.Message, "cost limit of 100000") {
			t.Fatalf("RuleError message %q does not name the cost limit", dup.Message)
		}
		// The other adapter's report is aggregated as usual.
		e.report(c, report("landing-zone", 1, "True")).expect(201)
		e.expectCond(c.ID, "Ready", "True/ResourceReady/1")
		e.expectCond(c.ID, "NoDuplicates", "False/RuleError/1")
		// Smaller data: the rule is within the limit again.
		e.report(c, withItems("validation", items[:20])).expect(201)
		e.expectCond(c.ID, "NoDuplicates", "True/RuleSatisfied/1")
		e.expectCond(c.ID, "NoNeedle", "True/RuleSatisfied/1")
	}, withKinds(t, costKinds))
}
