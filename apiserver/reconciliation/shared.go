package reconciliation

import (
	"context"

	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation/guard"
)

// Reader reads the workflow of a resource.
type Reader interface {
	Read(ctx context.Context, kind, id string) (Workflow, error)
}

// SharedReader reads through a guard, so callers of the endpoint cannot
// slow the reconciles it reports on: callers of one resource within a
// second share one read, and a replica's reads a second are bounded (a
// read over the budget fails with a *guard.BusyError). The handler has
// already checked that the caller may see the resource, so a read shared
// by several callers tells none of them anything new.
type SharedReader struct {
	reader Reader
	group  *guard.Group[Workflow]
}

// NewSharedReader guards r with cfg.
func NewSharedReader(r Reader, cfg guard.Config) (*SharedReader, error) {
	g, err := guard.New[Workflow](cfg)
	if err != nil {
		return nil, err
	}
	return &SharedReader{reader: r, group: g}, nil
}

// SetPerSecond changes the replica's budget of reads a second.
func (s *SharedReader) SetPerSecond(perSecond float64) { s.group.SetPerSecond(perSecond) }

// ReadBudget is the budget of reads a second while waiting changes are
// held back for admission (waiting > 0): a tenth of base, at least one
// (or base, when that is less).
// Admission control holds work back when Temporal is at the load it can
// take; a read of a workflow (a describe and a query through Temporal's
// frontend, history and matching, and a reconciler worker) would take
// from that capacity what the reconciles need.
func ReadBudget(base float64, waiting int) float64 {
	if waiting <= 0 {
		return base
	}
	return min(base, max(1, base/10))
}

// Read reads the workflow of a resource, sharing the read.
func (s *SharedReader) Read(ctx context.Context, kind, id string) (Workflow, error) {
	return s.group.Do(ctx, kind+"/"+id, func(ctx context.Context) (Workflow, error) {
		return s.reader.Read(ctx, kind, id)
	})
}
