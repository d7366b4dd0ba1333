// Adapter status reports: storing them under the resource's row lock and
// listing them.

package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/statusreport"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// ReportResult tells the handler how to answer a status report.
type ReportResult struct {
	// Status is the stored report; nil when the report was discarded (204).
	Status *resource.AdapterStatus
	// Discarded says why a report was dropped.
	Discarded string
}

// MaxAdaptersPerResource bounds the adapters with a stored status on one
// resource: any caller may report under any adapter name, and every status
// is kept and listed. Registered adapters are always accepted.
const MaxAdaptersPerResource = 64

// ReportStatus applies an adapter's report under the resource's row lock.
func (s *Service) ReportStatus(ctx context.Context, ref Ref, report *resource.StatusReport) (ReportResult, error) {
	now := s.clock()
	if errs := statusreport.Validate(report, now); len(errs) > 0 {
		return ReportResult{}, problem.Validation(errs...)
	}
	var res ReportResult
	var generation int64
	err := s.inTx(ctx, func(tx store.Tx) error {
		parent, r, err := s.lockWithParent(ctx, tx, ref)
		if err != nil {
			return err
		}
		generation = r.Generation
		statuses, err := tx.Statuses(ctx, r.ID)
		if err != nil {
			return err
		}
		var existing *resource.AdapterStatus
		for i := range statuses {
			if statuses[i].Adapter == report.Adapter {
				existing = &statuses[i]
			}
		}
		if existing == nil && len(statuses) >= MaxAdaptersPerResource && !s.isDeclared(r.Kind, report.Adapter) {
			return problem.Validation(problem.FieldError{Field: "adapter", Value: report.Adapter,
				Constraint: fmt.Sprintf("maxAdapters=%d", MaxAdaptersPerResource),
				Message:    fmt.Sprintf("%s %s already holds statuses of %d adapters, the limit; only registered and optional adapters may add more", r.Kind, r.ID, len(statuses))})
		}
		outcome, why := statusreport.Decide(report, r.Generation, existing)
		if outcome == statusreport.Discard {
			res.Discarded = why
			return nil
		}
		st := statusreport.Merge(report, existing, now)
		if err := tx.PutStatus(ctx, r.ID, st); err != nil {
			return err
		}
		res.Status = &st
		// The round at a generation has started once every adapter the
		// kind registers has reported at it: its first pass, the
		// dispatches Temporal makes at once for a change, is over, and
		// the relay's admission control stops counting it as in flight.
		// Only declared adapters count, so no other caller can release one.
		if s.isDeclared(r.Kind, report.Adapter) && (existing == nil || existing.ObservedGeneration < st.ObservedGeneration) &&
			firstPassDone(s.registered[r.Kind], st, statuses) {
			if err := tx.StartRound(ctx, r.ID, st.ObservedGeneration, now); err != nil {
				return err
			}
		}
		if outcome == statusreport.StoreOnly || !s.isRegistered(r.Kind, report.Adapter) {
			return nil
		}
		if existing == nil {
			// A first report: where it sorts among the others is the
			// database collation's call, so read them back.
			err = s.settle(ctx, tx, r, now)
		} else {
			// The statuses read under the lock, with this report in place
			// of the adapter's previous one, are what a second read would
			// return: one round trip fewer on the API's busiest write.
			*existing = st
			err = s.settleWith(ctx, tx, r, statuses, now)
		}
		if err != nil {
			return err
		}
		if parent != nil {
			return s.settleParent(ctx, tx, parent, now)
		}
		return nil
	})
	if err != nil {
		return ReportResult{}, asProblem(err)
	}
	ev := s.log.Debug().Str("kind", ref.Kind).Str("resource_id", ref.ID).Int64("generation", generation).
		Str("adapter", report.Adapter).Int64("observed_generation", report.ObservedGeneration)
	if res.Discarded != "" {
		ev.Str("discarded", res.Discarded).Msg("status report discarded")
	} else {
		ev.Msg("status report stored")
	}
	return res, nil
}

// ListStatuses pages through the stored reports of a resource.
func (s *Service) ListStatuses(ctx context.Context, ref Ref, page, size int) ([]resource.AdapterStatus, int64, error) {
	if _, err := s.get(ctx, ref); err != nil {
		return nil, 0, err
	}
	items, total, err := s.store.ListStatuses(ctx, ref.ID, (page-1)*size, size)
	if err != nil {
		return nil, 0, problem.Internal(err)
	}
	return items, total, nil
}

func (s *Service) isRegistered(kind, adapter string) bool {
	for _, a := range s.registered[kind] {
		if a == adapter {
			return true
		}
	}
	return false
}

// firstPassDone reports whether, with report in place of its adapter's
// earlier status, every registered adapter has reported at the report's
// generation. A kind that registers none (optional adapters only) is
// done at its first declared report.
func firstPassDone(registered []string, report resource.AdapterStatus, statuses []resource.AdapterStatus) bool {
	for _, a := range registered {
		if a == report.Adapter {
			continue
		}
		i := slices.IndexFunc(statuses, func(st resource.AdapterStatus) bool { return st.Adapter == a })
		if i < 0 || statuses[i].ObservedGeneration < report.ObservedGeneration {
			return false
		}
	}
	return true
}

// registeredStatuses keeps the reports of the kind's registered adapters.
func (s *Service) registeredStatuses(kind string, statuses []resource.AdapterStatus) []resource.AdapterStatus {
	out := make([]resource.AdapterStatus, 0, len(statuses))
	for i := range statuses {
		if s.isRegistered(kind, statuses[i].Adapter) {
			out = append(out, statuses[i])
		}
	}
	return out
}
