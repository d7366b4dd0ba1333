package reconcile

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// counters captures the counters a workflow increments, by name and tags.
type counters struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (c *counters) handler(tags map[string]string) client.MetricsHandler {
	return capture{c: c, tags: tags}
}

// get is the count of name with exactly these tags ("k=v" pairs).
func (c *counters) get(name string, tags ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.Sort(tags)
	return c.counts[name+"{"+strings.Join(tags, ",")+"}"]
}

type capture struct {
	c    *counters
	tags map[string]string
}

func (h capture) WithTags(tags map[string]string) client.MetricsHandler {
	all := maps.Clone(h.tags)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, tags)
	return capture{c: h.c, tags: all}
}

func (h capture) Counter(name string) client.MetricsCounter { return counter{h: h, name: name} }
func (h capture) Gauge(string) client.MetricsGauge          { return client.MetricsNopHandler.Gauge("") }
func (h capture) Timer(string) client.MetricsTimer          { return client.MetricsNopHandler.Timer("") }

type counter struct {
	h    capture
	name string
}

func (c counter) Inc(n int64) {
	var tags []string
	for k, v := range c.h.tags {
		if k == "kind" || !strings.HasPrefix(k, "temporal") && k != "namespace" && k != "task_queue" && k != "workflow_type" {
			tags = append(tags, k+"="+v)
		}
	}
	slices.Sort(tags)
	c.h.c.mu.Lock()
	defer c.h.c.mu.Unlock()
	if c.h.c.counts == nil {
		c.h.c.counts = map[string]int64{}
	}
	c.h.c.counts[c.name+"{"+strings.Join(tags, ",")+"}"] += n
}

// Contract: every round is counted with its cause, so an operator can see
// what an idle fleet spends its rounds on (operator guide, "What causes a
// round, and what it costs").
func TestRoundsAreCountedByCause(t *testing.T) {
	h := newHarness(t)
	h.watched = allWatched(threeAdapters...)
	h.states = []ResourceState{reconciledAt(1), reconciledAt(1), reconciledAt(2), gone}
	h.signalAt(5*time.Minute, Signal{Reason: ReasonObjectChanged, Changed: []string{"landing-zone"}})
	h.signalAt(10*time.Minute, Signal{Generation: 2, Reason: "updated"})
	h.exec(Input{Ref: cluster, Generation: 1, Adapters: threeAdapters})
	for cause, want := range map[RoundCause]int64{CauseGeneration: 2, CauseWake: 1, CauseSafetyNet: 1, CauseRetry: 0} {
		if got := h.counters.get(MetricRounds, "cause="+string(cause), "kind=Cluster"); got != want {
			t.Errorf("rounds with cause %s = %d, want %d (all: %v)", cause, got, want, h.counters.counts)
		}
	}
}
