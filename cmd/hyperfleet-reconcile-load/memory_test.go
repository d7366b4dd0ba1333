package main

import (
	"strings"
	"testing"
)

func TestStatusKiB(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    string
		rss, peak int64
	}{
		{"both", "Name:\thyperfleet\nVmHWM:\t  20480 kB\nVmRSS:\t  10240 kB\n", 10240, 20480},
		{"absent", "Name:\thyperfleet\n", 0, 0},
		{"garbled", "VmRSS:\tlots kB\nVmHWM\n", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rss, peak := statusKiB(tc.status)
			if rss != tc.rss || peak != tc.peak {
				t.Fatalf("statusKiB = %d, %d; want %d, %d", rss, peak, tc.rss, tc.peak)
			}
		})
	}
}

func TestMemoryNote(t *testing.T) {
	got := memoryNote(apiMemory{rss: 102400}, apiMemory{rss: 102400 + 27*1000}, apiMemory{rss: 204800, peak: 307200}, 1000)
	for _, want := range []string{"100.0 MiB before", "with 1000 open (27.0 KiB a watcher)", "200.0 MiB at the last Reconciled", "peaks 300.0 MiB"} {
		if !strings.Contains(got, want) {
			t.Errorf("memoryNote = %q; want it to contain %q", got, want)
		}
	}
	if none := memoryNote(apiMemory{rss: 1024}, apiMemory{}, apiMemory{rss: 2048}, 0); strings.Contains(none, "watcher") {
		t.Errorf("memoryNote without watchers = %q; want no per-watcher figure", none)
	}
}
