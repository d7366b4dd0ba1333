//go:build !unix

package loopback

// reserve reserves nothing where record locks are not available: ports
// are only checked for a listener.
func reserve(int) bool { return true }
