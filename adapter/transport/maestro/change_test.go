package maestro

import (
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/hyperfleet/hyperfleet/adapter/transport"
)

func TestChangeOf(t *testing.T) {
	for _, c := range []struct {
		name          string
		t             watch.EventType
		update        bool
		before, after string
		want          transport.ChangeKind
	}{
		{"deletion confirmed by the agent", watch.Deleted, true, "a", "a", transport.ChangeDeleted},
		{"deletion of one never seen", watch.Deleted, false, "", "a", transport.ChangeDeleted},
		{"listed at the watch's start: baseline", watch.Modified, false, "", "a", ""},
		{"first status of a work just written", watch.Modified, true, "", "a", transport.ChangeStatus},
		{"status unchanged (a resync or a repeated report)", watch.Modified, true, "a", "a", ""},
		{"readiness changed", watch.Modified, true, "a", "b", transport.ChangeStatus},
		{"listed after a reconnect, changed while away", watch.Modified, false, "a", "b", transport.ChangeStatus},
		{"listed after a reconnect, unchanged", watch.Modified, false, "a", "a", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := changeOf(c.t, c.update, c.before, c.after); got != c.want {
				t.Errorf("changeOf(%s, update=%v, %q, %q) = %q, want %q", c.t, c.update, c.before, c.after, got, c.want)
			}
		})
	}
}
