//go:build tools

// Package tools pins the Maestro command built into bin/ for tests.
package tools

import _ "github.com/openshift-online/maestro/cmd/maestro"
