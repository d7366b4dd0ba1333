package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

// registeredSetting stores the adapter lists the conditions were last
// computed with.
const registeredSetting = "registered_adapters"

// SyncRegistration re-aggregates every resource when the registered adapter
// lists differ from the ones the stored conditions were computed with, so
// adding or removing an adapter takes effect on existing resources (a newly
// registered adapter makes Ready False until it reports). It is a no-op when
// nothing changed, and it returns the number of resources re-aggregated.
func (s *Service) SyncRegistration(ctx context.Context) (int, error) {
	want, err := json.Marshal(s.registered)
	if err != nil {
		return 0, err
	}
	have, ok, err := s.store.GetSetting(ctx, registeredSetting)
	if err != nil {
		return 0, err
	}
	if ok && have == string(want) {
		return 0, nil
	}
	n := 0
	for _, kind := range s.kinds.Names() {
		after := ""
		for {
			page, err := s.store.LiveResources(ctx, kind, after, 200)
			if err != nil {
				return n, err
			}
			if len(page) == 0 {
				break
			}
			for i := range page {
				ref := Ref{Kind: kind, ID: page[i].ID}
				if page[i].OwnerReferences != nil {
					ref.ParentID = page[i].OwnerReferences.ID
				}
				if err := s.reaggregate(ctx, ref); err != nil {
					return n, fmt.Errorf("re-aggregate %s %s: %w", kind, page[i].ID, err)
				}
				n++
			}
			after = page[len(page)-1].ID
		}
	}
	if err := s.store.PutSetting(ctx, registeredSetting, string(want)); err != nil {
		return n, err
	}
	s.log.Info().Int("resources", n).RawJSON("registered", want).Msg("registered adapters changed: conditions re-aggregated")
	return n, nil
}

func (s *Service) reaggregate(ctx context.Context, ref Ref) error {
	return s.inTx(ctx, func(tx store.Tx) error {
		parent, r, err := s.lockWithParent(ctx, tx, ref)
		if err != nil {
			return ignoreGone(err)
		}
		now := s.clock()
		if err := s.settle(ctx, tx, r, now); err != nil {
			return err
		}
		if parent != nil {
			return s.settleParent(ctx, tx, parent, now)
		}
		return nil
	})
}

// ignoreGone treats a resource removed meanwhile as done.
func ignoreGone(err error) error {
	var p *problem.Problem
	if errors.As(err, &p) && p.Status == http.StatusNotFound {
		return nil
	}
	return err
}
