//go:build tools

// Package tools pins Temporal's own server and its SQL schema tool, built
// into bin/ for the production topology (`make run-ha`) and its tests.
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
