//go:build !race

package api

// raceEnabled says the race detector is on: it allocates for itself, so
// allocation bounds measured with it on do not hold.
const raceEnabled = false
