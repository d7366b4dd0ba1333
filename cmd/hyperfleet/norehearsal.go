//go:build !rehearsal

package main

import "github.com/spf13/pflag"

// addRehearsalFlag adds nothing: the product binary has no
// --upgrade-rehearsal. Only a test build (-tags rehearsal, rehearsal.go)
// hosts the rehearsal workflow.
func addRehearsalFlag(*pflag.FlagSet, *rolloutFlags) {}
