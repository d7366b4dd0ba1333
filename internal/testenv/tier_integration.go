//go:build integration

package testenv

// Integration reports whether the tests were built with the integration
// tag, the tier that runs against real servers (make test). Suites that
// run on several backends use it to add PostgreSQL only there, so the
// unit tier still runs them on SQLite.
const Integration = true
