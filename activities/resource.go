package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Resources reads resources back from the API for the reconciler.
type Resources struct {
	API *apiclient.Client
}

// Register adds ReadResource under the name the workflow calls.
func (r *Resources) Register(reg Registry) {
	reg.RegisterActivityWithOptions(r.ReadResource, activity.RegisterOptions{Name: reconcile.ActivityReadResource})
}

// ReadResource reports where a resource stands: gone (404), or its
// generation and whether it is Reconciled, i.e. Ready=True observed at the
// current generation. Any other answer is an error Temporal retries.
func (r *Resources) ReadResource(ctx context.Context, ref reconcile.Ref) (reconcile.ResourceState, error) {
	if err := ref.Validate(); err != nil {
		return reconcile.ResourceState{}, temporal.NewNonRetryableApplicationError(err.Error(), reconcile.ErrConfig, err)
	}
	resp, err := r.API.Do(ctx, apiclient.Request{Method: http.MethodGet, URL: ref.Href(), Endpoint: "read-resource"})
	if err != nil {
		return reconcile.ResourceState{}, fmt.Errorf("read %s %s: %w", ref.Kind, ref.ID, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return reconcile.ResourceState{Gone: true}, nil
	}
	if !resp.OK() {
		return reconcile.ResourceState{}, fmt.Errorf("read %s %s: GET %s returned HTTP %d: %.300s", ref.Kind, ref.ID, resp.URL, resp.StatusCode, resp.Body)
	}
	var res resource.Resource
	if err := json.Unmarshal(resp.Body, &res); err != nil {
		return reconcile.ResourceState{}, fmt.Errorf("read %s %s: decode: %w", ref.Kind, ref.ID, err)
	}
	st := StateOf(&res)
	if st.Reconciled {
		return st, nil
	}
	reports, gone, err := r.statuses(ctx, ref)
	if err != nil {
		return reconcile.ResourceState{}, err
	}
	if gone {
		return reconcile.ResourceState{Gone: true}, nil
	}
	st.Settled = Settled(reports, st)
	return st, nil
}

// statuses reads every stored adapter report of the resource, page by page.
func (r *Resources) statuses(ctx context.Context, ref reconcile.Ref) (reports []resource.AdapterStatus, gone bool, err error) {
	for page := 1; ; page++ {
		url := fmt.Sprintf("%s/statuses?page=%d&pageSize=100", ref.Href(), page)
		resp, err := r.API.Do(ctx, apiclient.Request{Method: http.MethodGet, URL: url, Endpoint: "read-statuses"})
		if err != nil {
			return nil, false, fmt.Errorf("read statuses of %s %s: %w", ref.Kind, ref.ID, err)
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, true, nil
		}
		if !resp.OK() {
			return nil, false, fmt.Errorf("read statuses of %s %s: GET %s returned HTTP %d: %.300s", ref.Kind, ref.ID, resp.URL, resp.StatusCode, resp.Body)
		}
		var list resource.List[resource.AdapterStatus]
		if err := json.Unmarshal(resp.Body, &list); err != nil {
			return nil, false, fmt.Errorf("read statuses of %s %s: decode: %w", ref.Kind, ref.ID, err)
		}
		reports = append(reports, list.Items...)
		if len(list.Items) == 0 || int64(len(reports)) >= list.Total {
			return reports, false, nil
		}
	}
}

// Settled lists the adapters whose stored report says they are done at the
// resource's generation: Available=True, or Finalized=True while it is
// being deleted. Sorted, so the workflow's history is deterministic.
func Settled(reports []resource.AdapterStatus, st reconcile.ResourceState) []string {
	done := resource.ConditionAvailable
	if st.Deleting {
		done = resource.ConditionFinalized
	}
	var out []string
	for i := range reports {
		if reports[i].ObservedGeneration == st.Generation && reports[i].ConditionStatus(done) == resource.StatusTrue {
			out = append(out, reports[i].Adapter)
		}
	}
	slices.Sort(out)
	return out
}

// StateOf is the workflow's view of a resource.
func StateOf(res *resource.Resource) reconcile.ResourceState {
	st := reconcile.ResourceState{Generation: res.Generation, Deleting: res.DeletedTime != nil}
	if c, ok := res.Condition(resource.ConditionReady); ok {
		st.Reason = c.Reason
		st.Reconciled = c.Status == resource.StatusTrue && c.ObservedGeneration == res.Generation && !st.Deleting
	}
	return st
}
