package main

import (
	"strings"
	"testing"
)

func TestPortOf(t *testing.T) {
	for addr, want := range map[string]int{":8000": 8000, "127.0.0.1:8123": 8123, "[::1]:9": 9, "localhost": 0, ":0": 0, "": 0, ":http": 0} {
		if got := portOf(addr); got != want {
			t.Errorf("portOf(%q) = %d, want %d", addr, got, want)
		}
	}
}

// Issue 43: `hyperfleet dev` silently ignored HYPERFLEET_TENANCY_FILE and
// the JWT settings; it refuses them by name.
func TestDevRefusesServeOnlySettings(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	if err := refuseServeOnlyEnv("dev", env(map[string]string{"HYPERFLEET_DB_DRIVER": "sqlite"})); err != nil {
		t.Errorf("refused an ordinary setting: %v", err)
	}
	for _, name := range []string{"HYPERFLEET_TENANCY_FILE", "HYPERFLEET_JWT_ENABLED"} {
		err := refuseServeOnlyEnv("dev", env(map[string]string{name: "x"}))
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "hyperfleet serve") {
			t.Errorf("%s set: %v, want a refusal naming it and the way out", name, err)
		}
	}
}
