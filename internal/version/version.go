// Package version holds the build's version and time, set by the Makefile
// with -ldflags "-X".
package version

// Set at build time.
var (
	Version   = "dev"
	BuildTime = "unknown"
)
