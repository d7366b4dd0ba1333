package testenv

// stopKube stops the control plane started by this process, if any.
func stopKube() {}
