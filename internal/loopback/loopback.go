// Package loopback hands out free loopback ports for servers this process
// starts (the embedded Temporal server, test databases and control planes).
//
// A port is chosen below the kernel's ephemeral range and never handed out
// twice by one process. A port from the ephemeral range (what listening on
// port 0 returns) is free only until the listener closes: any outgoing
// connection on the machine may then take it as its source port before the
// server binds it, and a server that loses its port fails to start.
//
// A port handed out is also reserved on the machine for the rest of this
// process's life (see reserve), so another process using this package
// does not take it while its server is down: a test that stops a server
// and starts it again on the same port, as after an outage, finds the
// port still its own.
package loopback

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	mu                  sync.Mutex
	low, high, nextPort int
	avoid               = map[int]bool{}
)

// Avoid keeps ports that this process was told to bind (a --listen or
// --temporal-port flag) out of what Port hands out: such a port is free
// until its server binds it, and a server of this process given the same
// port first would take it.
func Avoid(ports ...int) {
	mu.Lock()
	defer mu.Unlock()
	for _, p := range ports {
		if p > 0 {
			avoid[p] = true
		}
	}
}

// Port returns a loopback port nobody listens on at the moment of asking
// and no other process has reserved; it is reserved for this one.
func Port() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	if nextPort == 0 {
		lo := ephemeralLow()
		low, high = max(1024, lo-12000), lo
		nextPort = low + int(time.Now().UnixNano()%int64(high-low))
	}
	for range high - low {
		p := nextPort
		if nextPort++; nextPort >= high {
			nextPort = low
		}
		if avoid[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		if !reserve(p) {
			continue // another process holds it, though its server is down
		}
		avoid[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d-%d", low, high)
}

// Ports returns n distinct ports (see Port).
func Ports(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range n {
		p, err := Port()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 2048 {
				return lo
			}
		}
	}
	return 32768
}
