package watch

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/hyperfleet/hyperfleet/apiserver/problem"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

// Stream is what one watch sends and where.
type Stream struct {
	Kind, ParentID string
	// Where is the watch's search, translated for the table "resources"
	// without Indexed (empty: none); it is checked against each change's
	// resource as it stood after the change.
	Where search.Where
	// From resumes after this version; a negative From starts at the
	// newest change.
	From int64
	// Path is the request's path, the instance of an ERROR's problem.
	Path string
	// Project cuts a rendered resource down to the request's fields=;
	// nil sends it whole.
	Project func([]byte) ([]byte, error)
	// ProjectKey names what Project keeps (the request's fields=):
	// watches with the same key share each change's projected event.
	// Empty with a non-nil Project: this watch's events are its own.
	ProjectKey string
	// Send writes bytes to the client and flushes them.
	Send func([]byte) error
}

// Serve streams a subscribed watch until ctx ends, the client goes or the
// hub drops the watcher (an ERROR event says why). start is what
// Subscribe returned: the changes up to it are read from the log (within
// the caller's scope that ctx carries), the later ones come from the
// hub, so none is missed or sent twice. A first BOOKMARK says where the
// stream starts.
func (h *Hub) Serve(ctx context.Context, w *Watcher, start int64, s Stream) error {
	cursor := s.From
	if cursor < 0 {
		cursor = start
	}
	if err := s.Send(AppendEvent(nil, Bookmark, cursor, nil)); err != nil {
		return err
	}
	for cursor < start {
		changes, err := h.log.ReadChanges(ctx, store.ChangeQuery{After: cursor, UpTo: start, Kind: s.Kind, ParentID: s.ParentID, Where: s.Where, Limit: readBatch})
		if err != nil {
			return err
		}
		var buf []byte
		for i := range changes {
			obj, err := h.cfg.Render(ctx, &changes[i])
			if err != nil {
				return err
			}
			if buf, err = appendChange(buf, &changes[i], obj, s.Project); err != nil {
				return err
			}
		}
		if len(buf) > 0 {
			if err := s.Send(buf); err != nil {
				return err
			}
		}
		if len(changes) < readBatch {
			cursor = start
			break
		}
		cursor = changes[len(changes)-1].Seq
	}
	bookmark := time.NewTicker(h.cfg.Bookmark)
	defer bookmark.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.Done():
			return s.Send(AppendEvent(nil, Error, 0, dropProblem(w.Err(), s.Path)))
		case e := <-w.ch:
			group := []*entry{e}
		more:
			for len(group) < readBatch {
				select {
				case e := <-w.ch:
					group = append(group, e)
				default:
					break more
				}
			}
			var err error
			if cursor, err = h.sendGroup(ctx, group, cursor, s); err != nil {
				return err
			}
		case <-bookmark.C:
			// Every change up to the hub's position that this watch
			// selects has been sent once its buffer is empty (the hub
			// hands changes over before it moves on).
			if last := h.Last(); len(w.ch) == 0 && last > cursor {
				cursor = last
			}
			if err := s.Send(AppendEvent(nil, Bookmark, cursor, nil)); err != nil {
				return err
			}
		}
	}
}

// sendGroup sends the changes of a group after cursor that the search
// selects, and returns the new cursor.
func (h *Hub) sendGroup(ctx context.Context, group []*entry, cursor int64, s Stream) (int64, error) {
	seqs := make([]int64, 0, len(group))
	for _, c := range group {
		if c.Seq > cursor {
			seqs = append(seqs, c.Seq)
		}
	}
	if len(seqs) == 0 {
		return cursor, nil
	}
	var matched map[int64]bool
	if s.Where.SQL != "" {
		var err error
		if matched, err = h.log.MatchChanges(ctx, seqs, s.Where); err != nil {
			return cursor, err
		}
	}
	// One event is sent as it is shared; several are copied into one
	// write.
	var one, buf []byte
	for _, c := range group {
		if c.Seq <= cursor {
			continue
		}
		cursor = c.Seq
		if matched != nil && !matched[c.Seq] {
			continue
		}
		ev, err := h.event(c, &s)
		if err != nil {
			return cursor, err
		}
		switch {
		case one == nil && buf == nil:
			one = ev
		case buf == nil:
			buf = append(append(make([]byte, 0, 2*len(one)+len(ev)), one...), ev...)
		default:
			buf = append(buf, ev...)
		}
	}
	if buf == nil {
		buf = one
	}
	if len(buf) == 0 {
		return cursor, nil
	}
	return cursor, s.Send(buf)
}

func appendChange(b []byte, c *store.Change, obj []byte, project func([]byte) ([]byte, error)) ([]byte, error) {
	if project != nil {
		var err error
		if obj, err = project(obj); err != nil {
			return b, err
		}
	}
	return AppendEvent(b, c.Type, c.Seq, obj), nil
}

// dropProblem is the problem document of an ERROR event.
func dropProblem(err error, path string) []byte {
	p := problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable,
		"the server is shutting down; resume the watch from the last resource_version received (on another replica)")
	if errors.Is(err, ErrSlow) {
		p = problem.New(http.StatusServiceUnavailable, problem.CodeWatchDropped,
			"the watch fell behind the changes (its buffer of changes filled) and was closed; resume it from the last resource_version received")
	}
	p.Instance, p.Timestamp = path, time.Now().UTC()
	b, _ := json.Marshal(p) // a problem always encodes
	return b
}
