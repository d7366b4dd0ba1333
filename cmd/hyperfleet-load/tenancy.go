package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// With --tenants the started server runs with a gateway-style tenancy
// file, and the driver plays the gateway and the adapters: each request
// carries the headers of the caller it stands for, a system caller's the
// system secret.
const (
	tenantHeader = "X-Tenant-Org"
	systemHeader = "X-HyperFleet-System"
)

// systemSecret is this run's system secret, written next to the tenancy
// file.
var systemSecret = func() string {
	b := make([]byte, 32)
	_, _ = crand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}()

// writeTenancyFile writes the tenancy file and its system secret into dir.
func writeTenancyFile(dir string) (string, error) {
	secret := filepath.Join(dir, "system-secret")
	if err := os.WriteFile(secret, []byte(systemSecret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the system secret: %w", err)
	}
	doc := "system_header: " + systemHeader + "\nsystem_secret_file: " + secret + "\ndimensions:\n  - {header: " + tenantHeader + ", key: org, required: true}\n"
	f := filepath.Join(dir, "tenancy.yaml")
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		return "", fmt.Errorf("write the tenancy file: %w", err)
	}
	return f, nil
}

func tenantName(i int) string { return fmt.Sprintf("t%d", i) }

type tenantKey struct{}

// asTenant makes the requests made with ctx those of tenant i.
func asTenant(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, tenantKey{}, i)
}

// owners remembers which tenant created each cluster.
type owners struct {
	mu sync.RWMutex
	of map[string]int
}

func (o *owners) set(id string, tenant int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.of == nil {
		o.of = map[string]int{}
	}
	o.of[id] = tenant
}

func (o *owners) get(id string) (int, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	t, ok := o.of[id]
	return t, ok
}

// setCaller sets the headers of the caller a request stands for, as a
// gateway would: status reports are the adapters' (system callers); a
// request about one cluster is its tenant's; a continuation token's page
// is tenant 0's, whose list the tokens were read from; any other list is
// a random tenant's; a request made under asTenant is that tenant's.
func (l *loader) setCaller(ctx context.Context, req *http.Request) {
	if l.tenants == 0 {
		return
	}
	path := strings.TrimPrefix(req.URL.Path, "/api/hyperfleet/v1")
	switch {
	case strings.HasSuffix(path, "/statuses") && req.Method != http.MethodGet:
		req.Header.Set(systemHeader, systemSecret)
		return
	case ctx.Value(tenantKey{}) != nil:
		req.Header.Set(tenantHeader, tenantName(ctx.Value(tenantKey{}).(int)))
		return
	}
	if rest, ok := strings.CutPrefix(path, "/clusters/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		if t, ok := l.owner.get(id); ok {
			req.Header.Set(tenantHeader, tenantName(t))
			return
		}
	}
	if req.URL.Query().Has("pageToken") {
		req.Header.Set(tenantHeader, tenantName(0))
		return
	}
	req.Header.Set(tenantHeader, tenantName(rand.IntN(l.tenants)))
}
