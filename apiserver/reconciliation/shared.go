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
// read over the budget fails with guard.ErrBusy). The handler has
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

// Read reads the workflow of a resource, sharing the read.
func (s *SharedReader) Read(ctx context.Context, kind, id string) (Workflow, error) {
	return s.group.Do(ctx, kind+"/"+id, func(ctx context.Context) (Workflow, error) {
		return s.reader.Read(ctx, kind, id)
	})
}
