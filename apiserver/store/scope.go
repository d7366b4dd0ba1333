// The caller's scope: every read and lock of resources sees only what the
// request's caller may see, filtered in SQL, so another tenant's row is
// neither decoded nor locked and is missing exactly as a random id is.

package store

import (
	"context"

	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
)

// scopeOf is the tenancy (canonical form) a context's caller may see: a
// tenant's own, or "" (every tenancy) for a system caller, a server
// without tenancy and the API's own passes (the relay, re-aggregation),
// whose contexts carry no caller. The scope travels with the context the
// middleware resolved the caller into, so no read path can forget it.
func scopeOf(ctx context.Context) string { return tenancy.FromContext(ctx).Key }

// scopedList applies the caller's scope to a list. A query that names
// another tenancy than the caller's matches nothing (ok false).
func scopedList(ctx context.Context, q ListQuery) (_ ListQuery, ok bool) {
	scope := scopeOf(ctx)
	switch {
	case scope == "":
		return q, true
	case q.Tenant == "" || q.Tenant == scope:
		q.Tenant = scope
		return q, true
	default:
		return q, false
	}
}
