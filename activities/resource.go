package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"go.temporal.io/sdk/activity"

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
	return StateOf(&res), nil
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
