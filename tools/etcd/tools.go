//go:build tools

// Package tools pins the etcd server built into bin/ for tests.
package tools

import _ "go.etcd.io/etcd/server/v3"
