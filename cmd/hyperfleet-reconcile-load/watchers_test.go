package main

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

// An event's time is the newest the resource carries, whichever field
// holds it.
func TestChangedAt(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    resource.Resource
		want time.Time
	}{
		{"created only", resource.Resource{CreatedTime: t0}, t0},
		{"updated", resource.Resource{CreatedTime: t0, UpdatedTime: t0.Add(time.Second)}, t0.Add(time.Second)},
		{"a condition newest", resource.Resource{CreatedTime: t0, UpdatedTime: t0.Add(time.Second), Status: resource.Status{Conditions: []resource.Condition{
			{Type: "Ready", LastUpdatedTime: t0.Add(3 * time.Second)}, {Type: "Available", LastUpdatedTime: t0.Add(2 * time.Second)}}}}, t0.Add(3 * time.Second)},
	} {
		if got := changedAt(&tc.r); !got.Equal(tc.want) {
			t.Errorf("%s: changedAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A stream's ADDED and MODIFIED events count, bookmarks and other lines
// do not.
func TestWatchersRead(t *testing.T) {
	stream := strings.Join([]string{
		`event: ADDED`,
		`data: {"type":"ADDED","object":{"id":"a","created_time":"2026-12-02T00:00:00Z"}}`,
		``,
		`data: {"type":"BOOKMARK","object":{}}`,
		`: keep-alive`,
		`data: {"type":"MODIFIED","object":{"id":"a","created_time":"2026-12-02T00:00:00Z","updated_time":"2026-12-02T00:00:01Z"}}`,
		`data: not json`,
	}, "\n")
	var w watchers
	got := w.read(bufio.NewScanner(strings.NewReader(stream)))
	if len(got) != 2 || w.events.Load() != 2 {
		t.Fatalf("read %d delays, %d events; want 2 of each", len(got), w.events.Load())
	}
	if got[0] <= got[1] {
		t.Errorf("delays %v: the ADDED, a second older, must be the longer", got)
	}
}
