package worker

import (
	"context"
	"fmt"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// EnsureSearchAttributes registers the reconcile workflow's custom search
// attributes on the namespace when they are missing. A workflow that
// upserts an unregistered attribute cannot make progress, so a reconciler
// refuses to start when they cannot be registered, and says how to do it by
// hand.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	want := reconcile.SearchAttributes()
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range want {
		got, ok := have.GetCustomAttributes()[name]
		if !ok {
			missing[name] = typ
			continue
		}
		if got != typ {
			return fmt.Errorf("search attribute %s of namespace %s has type %s, the reconciler needs %s: remove it or use another namespace", name, namespace, got, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	if err != nil {
		return fmt.Errorf("register search attributes on namespace %s: %w; register them once by hand:\n%s", namespace, err, createCommands(namespace, missing))
	}
	return nil
}

func createCommands(namespace string, attrs map[string]enumspb.IndexedValueType) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		typ := strings.TrimPrefix(attrs[n].String(), "INDEXED_VALUE_TYPE_")
		fmt.Fprintf(&b, "  temporal operator search-attribute create --namespace %s --name %s --type %s\n", namespace, n, strings.ToUpper(typ[:1])+strings.ToLower(typ[1:]))
	}
	return b.String()
}
