package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// DefaultHistoryShards is the history shard count of a new production
// shape. Each shard writes one workflow update at a time, and the count
// is fixed once Temporal's database exists, so it is sized for the fleet
// the installation may grow to, not for today's: 512, Temporal's own
// starting point for production. The operator guide ("Sizing") has the
// arithmetic; an idle shard costs a few database reads a minute.
const DefaultHistoryShards = 512

// formerDefaultShards is what releases before DefaultHistoryShards gave
// every run-ha installation.
const formerDefaultShards = 4

var shardsLine = regexp.MustCompile(`(?m)^\s*numHistoryShards:\s*(\d+)\s*$`)

// historyShards decides the shard count: the one Temporal's database was
// created with when it exists (read back from the history service's
// configuration of the last start), else the one asked for, else
// DefaultHistoryShards. Asking for another count than the database's is
// an error: Temporal cannot change it.
func historyShards(stateDir string, asked int) (int, error) {
	if asked < 0 {
		return 0, fmt.Errorf("history shards: %d is not a count (want 1 or more, or 0 for the default %d)", asked, DefaultHistoryShards)
	}
	file := filepath.Join(stateDir, "config", "temporal-history.yaml")
	raw, err := os.ReadFile(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if asked == 0 {
			return DefaultHistoryShards, nil
		}
		return asked, nil
	case err != nil:
		return 0, fmt.Errorf("read the history shard count of the existing Temporal database: %w", err)
	}
	have := formerDefaultShards
	if m := shardsLine.FindSubmatch(raw); m != nil {
		have, _ = strconv.Atoi(string(m[1]))
	}
	if asked != 0 && asked != have {
		return 0, fmt.Errorf("history shards: the Temporal database under %s was created with %d shards, and Temporal cannot change the count of an existing database: "+
			"start without --history-shards to keep %d, or use a new state directory for %d", stateDir, have, have, asked)
	}
	return have, nil
}
