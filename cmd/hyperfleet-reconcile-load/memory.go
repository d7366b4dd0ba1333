package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hyperfleet/hyperfleet/topology"
)

// apiMemory is the API replicas' resident set together, now and at each
// one's peak, in KiB: what the watches cost the servers that hold them.
type apiMemory struct{ rss, peak int64 }

func readAPIMemory(tp *topology.Topology) apiMemory {
	var m apiMemory
	for _, p := range tp.Processes() {
		if p.PID == 0 || !strings.HasPrefix(p.Name, "api-") {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
		if err != nil {
			continue
		}
		rss, peak := statusKiB(string(raw))
		m.rss += rss
		m.peak += peak
	}
	return m
}

// statusKiB reads VmRSS and VmHWM ("VmRSS:    1234 kB") from a
// /proc/<pid>/status text; a field that is absent reads 0.
func statusKiB(status string) (rss, peak int64) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			peak = n
		}
	}
	return rss, peak
}

// memoryNote says what the API replicas held before the watches, with
// them open and at the burst's end, and the difference per watcher.
func memoryNote(before, open, end apiMemory, watchers int) string {
	mib := func(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
	s := fmt.Sprintf("API replicas' resident set (both together): %s before the watches", mib(before.rss))
	if watchers > 0 {
		s += fmt.Sprintf(", %s with %d open (%.1f KiB a watcher)", mib(open.rss), watchers, float64(open.rss-before.rss)/float64(watchers))
	}
	return s + fmt.Sprintf(", %s at the last Reconciled, peaks %s", mib(end.rss), mib(end.peak))
}
