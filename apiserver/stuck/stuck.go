// Package stuck finds the resources that have not been Reconciled for
// longer than a threshold, and which adapters hold each of them back: the
// hyperfleet_reconcile_stuck gauge and its alert. It reads only the
// resources not Reconciled, through the term index that answers
// status.conditions.Reconciled='False' (both backends), so its cost
// follows what is unreconciled, not the fleet's size.
package stuck

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// NoAdapter is the adapter label of a stuck resource whose required
// adapters all say they are done (or that has none): what holds it back
// is not one adapter's report.
const NoAdapter = "none"

// Key is one series of the gauge.
type Key struct {
	Kind    string
	Adapter string
}

// Since is when a resource stopped being Reconciled, and whether it is
// not Reconciled at all: the last transition of its Reconciled condition
// (its creation when it has none yet).
func Since(r *resource.Resource) (time.Time, bool) {
	c, ok := r.Condition(resource.ConditionReconciled)
	switch {
	case !ok:
		return r.CreatedTime, true
	case c.Status == resource.StatusTrue:
		return time.Time{}, false
	case c.LastTransitionTime.IsZero():
		return r.CreatedTime, true
	}
	return c.LastTransitionTime, true
}

// Holding lists the required adapters that are not done with r: no report
// at its generation saying Available=True (Finalized=True while it is
// being deleted). NoAdapter alone when every one is done.
func Holding(r *resource.Resource, reports []resource.AdapterStatus, required []string) []string {
	done := resource.ConditionAvailable
	if r.DeletedTime != nil {
		done = resource.ConditionFinalized
	}
	var out []string
	for _, a := range required {
		i := slices.IndexFunc(reports, func(s resource.AdapterStatus) bool { return s.Adapter == a })
		if i < 0 || reports[i].ObservedGeneration != r.Generation || reports[i].ConditionStatus(done) != resource.StatusTrue {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return []string{NoAdapter}
	}
	return out
}

// Reader is what Count reads.
type Reader interface {
	Dialect() search.Dialect
	ListResources(ctx context.Context, q store.ListQuery) (store.Page, error)
	ListStatuses(ctx context.Context, resourceID string, offset, limit int) ([]resource.AdapterStatus, int64, error)
}

// Count counts, per kind and holding adapter, the resources not Reconciled
// since before now-after. A resource held back by two adapters counts for
// both. Every registered kind has its series, zero included, so an alert
// on the gauge sees it go back to zero.
func Count(ctx context.Context, st Reader, registered map[string][]string, after time.Duration, now time.Time) (map[Key]int64, error) {
	where, err := search.Translate("status.conditions.Reconciled = 'False'", st.Dialect(), search.Options{Table: "resources"})
	if err != nil {
		return nil, err
	}
	out := map[Key]int64{}
	cutoff := now.Add(-after)
	for kind, required := range registered {
		for _, a := range append(slices.Clone(required), NoAdapter) {
			out[Key{kind, a}] = 0
		}
		q := store.ListQuery{Kind: kind, Where: where, Limit: 500}
		for {
			page, err := st.ListResources(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("list %s resources not Reconciled: %w", kind, err)
			}
			for i := range page.Items {
				r := &page.Items[i]
				if since, not := Since(r); !not || !since.Before(cutoff) {
					continue
				}
				reports, _, err := st.ListStatuses(ctx, r.ID, 0, 1000)
				if err != nil {
					return nil, fmt.Errorf("statuses of %s %s: %w", kind, r.ID, err)
				}
				for _, a := range Holding(r, reports, required) {
					out[Key{kind, a}]++
				}
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
	}
	return out, nil
}

// DefaultAfter is how long a resource may stay not Reconciled before it
// counts as stuck (the API's --reconcile-stuck-after).
const DefaultAfter = time.Hour

// readEvery is how long one count serves scrapes: several Prometheus
// replicas scraping every few seconds cost one count a period.
const readEvery = 30 * time.Second

var (
	stuckDesc = prometheus.NewDesc("hyperfleet_reconcile_stuck",
		"Resources not Reconciled for longer than hyperfleet_reconcile_stuck_after_seconds, by kind and by the required adapter holding each back (none: every adapter says it is done).",
		[]string{"kind", "adapter"}, nil)
	afterDesc = prometheus.NewDesc("hyperfleet_reconcile_stuck_after_seconds",
		"How long a resource may stay not Reconciled before hyperfleet_reconcile_stuck counts it.", nil, nil)
)

// Collector exports the gauge, counting at most once per readEvery. A
// failed count exports no stuck series (and counts the error) rather than
// stale ones.
type Collector struct {
	st         Reader
	registered map[string][]string
	after      time.Duration
	errors     prometheus.Counter

	mu   sync.Mutex
	at   time.Time
	last map[Key]int64
}

// NewCollector counts the resources of the registered kinds not Reconciled
// for longer than after.
func NewCollector(st Reader, registered map[string][]string, after time.Duration) *Collector {
	if after <= 0 {
		after = DefaultAfter
	}
	return &Collector{st: st, registered: registered, after: after,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "hyperfleet_reconcile_stuck_read_errors_total",
			Help: "Failed counts of hyperfleet_reconcile_stuck."})}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stuckDesc
	ch <- afterDesc
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if c.last == nil || time.Since(c.at) > readEvery {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		counts, err := Count(ctx, c.st, c.registered, c.after, time.Now())
		cancel()
		c.at, c.last = time.Now(), counts
		if err != nil {
			c.errors.Inc()
		}
	}
	last := c.last
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(afterDesc, prometheus.GaugeValue, c.after.Seconds())
	c.errors.Collect(ch)
	for k, n := range last {
		ch <- prometheus.MustNewConstMetric(stuckDesc, prometheus.GaugeValue, float64(n), k.Kind, k.Adapter)
	}
}
