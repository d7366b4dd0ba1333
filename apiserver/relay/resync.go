package relay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// fingerprintSetting stores what the workflows were last told: the
// adapter registration and the workflow options.
const fingerprintSetting = "relay_fingerprint"

// Resync makes sure every live resource has a running workflow that knows
// the current adapter list and options: after a Temporal outage that lost
// state, a registration change, or a first start against an existing
// database. When neither the registration nor the options changed since the
// last pass (a stored fingerprint says so), only resources without a
// running workflow are handed over, so an ordinary restart sends no
// per-resource signal; otherwise every workflow is signalled, at most
// ResyncRate a second, and the fingerprint is stored once all have been.
func (r *Relay) Resync(ctx context.Context) error {
	want, err := r.fingerprint()
	if err != nil {
		return err
	}
	have, ok, err := r.cfg.Store.GetSetting(ctx, fingerprintSetting)
	if err != nil {
		return fmt.Errorf("read the relay fingerprint: %w", err)
	}
	if ok && have == want {
		n, err := r.startMissing(ctx)
		if err == nil {
			r.cfg.Logger.Info().Int("started", n).Msg("registration and options unchanged: handed over only resources without a running workflow")
		}
		return err
	}
	n, err := r.resyncAll(ctx)
	if err != nil {
		return err
	}
	if err := r.cfg.Store.PutSetting(ctx, fingerprintSetting, want); err != nil {
		return fmt.Errorf("store the relay fingerprint: %w", err)
	}
	r.cfg.Logger.Info().Int("resources", n).Msg("every live resource's workflow knows the current adapters and options")
	return nil
}

// fingerprint digests what every workflow must know.
func (r *Relay) fingerprint() (string, error) {
	kinds := make([]string, 0, len(r.cfg.Registered))
	for k := range r.cfg.Registered {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	// Format is the digest's own format, fixed at 2 (the value every
	// stored fingerprint has, under the key "Protocol"): a new workflow
	// release changes nothing a running workflow must be told (worker
	// versioning moves it), so releasing one sends no signal to the
	// fleet. Optional joins the digest only when some kind has optional
	// adapters, so a deployment without any keeps its stored fingerprint
	// and an upgrade signals no one.
	doc := struct {
		Format     int `json:"Protocol"`
		Kinds      []string
		Registered map[string][]string
		Optional   map[string][]string `json:",omitempty"`
		Options    reconcile.Options
	}{2, kinds, map[string][]string{}, map[string][]string{}, r.cfg.Options}
	for _, k := range kinds {
		doc.Registered[k] = sortedCopy(r.cfg.Registered[k])
	}
	for k, names := range r.cfg.Optional {
		if len(names) > 0 {
			doc.Optional[k] = sortedCopy(names)
		}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// reconciledKinds are the kinds that have adapters, required or
// optional, in a stable order.
func (r *Relay) reconciledKinds() []string {
	var kinds []string
	for _, set := range []map[string][]string{r.cfg.Registered, r.cfg.Optional} {
		for k, adapters := range set {
			if len(adapters) > 0 && !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	slices.Sort(kinds)
	return kinds
}

// eachLive calls fn for every page of live resources of the reconciled
// kinds, leaving out those whose change waits in the outbox: its hand-off
// will tell the workflow, through admission control, so the start-up pass
// does not start a burst's workflows all at once.
func (r *Relay) eachLive(ctx context.Context, fn func(kind string, page []store.LiveRef) error) error {
	for _, kind := range r.reconciledKinds() {
		after := ""
		for {
			page, err := r.cfg.Store.LiveRefs(ctx, kind, after, r.cfg.Batch)
			if err != nil {
				return fmt.Errorf("list %s resources: %w", kind, err)
			}
			if len(page) == 0 {
				break
			}
			after = page[len(page)-1].ID
			if page, err = r.notQueued(ctx, page); err != nil {
				return err
			}
			if err := fn(kind, page); err != nil {
				return err
			}
		}
	}
	return nil
}

// notQueued drops the resources whose change waits in the outbox.
func (r *Relay) notQueued(ctx context.Context, page []store.LiveRef) ([]store.LiveRef, error) {
	ids := make([]string, len(page))
	for i := range page {
		ids[i] = page[i].ID
	}
	queued, err := r.cfg.Store.Queued(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	return slices.DeleteFunc(page, func(ref store.LiveRef) bool { return queued[ref.ID] }), nil
}

// resyncAll signals every live resource's workflow (starting the missing
// ones), rate-limited.
func (r *Relay) resyncAll(ctx context.Context) (int, error) {
	limit := time.NewTicker(time.Duration(float64(time.Second) / r.cfg.ResyncRate))
	defer limit.Stop()
	count := 0
	err := r.eachLive(ctx, func(kind string, page []store.LiveRef) error {
		var (
			mu   sync.Mutex
			errs []error
		)
		r.forEach(ctx, len(page), func(ctx context.Context, i int) {
			select {
			case <-ctx.Done():
				return
			case <-limit.C:
			}
			if err := r.deliver(ctx, resyncOf(kind, page[i])); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s %s: %w", kind, page[i].ID, err))
				mu.Unlock()
			}
		})
		count += len(page)
		return errors.Join(errs...)
	})
	return count, err
}

// startMissing hands over the live resources that have no running workflow
// (Temporal lost its state, or a hand-off was lost), found by comparing the
// live resources with Temporal's list of running reconcile workflows. A
// workflow started a moment ago may not be listed yet: it only gets a
// resync signal, which runs no round.
func (r *Relay) startMissing(ctx context.Context) (int, error) {
	// As many running workflows as live resources: none is missing (a
	// removed resource's workflow ends itself), and the fleet need not be
	// listed. Otherwise compare the two lists.
	if same, err := r.countsMatch(ctx); err != nil || same {
		return 0, err
	}
	running, err := r.runningWorkflows(ctx)
	if err != nil {
		return 0, err
	}
	started := 0
	err = r.eachLive(ctx, func(kind string, page []store.LiveRef) error {
		var missing []store.LiveRef
		for _, ref := range page {
			if !running[reconcile.WorkflowID(kind, ref.ID)] {
				missing = append(missing, ref)
			}
		}
		var (
			mu   sync.Mutex
			errs []error
		)
		r.forEach(ctx, len(missing), func(ctx context.Context, i int) {
			if err := r.deliver(ctx, resyncOf(kind, missing[i])); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s %s: %w", kind, missing[i].ID, err))
				mu.Unlock()
			}
		})
		started += len(missing)
		return errors.Join(errs...)
	})
	return started, err
}

func (r *Relay) countsMatch(ctx context.Context) (bool, error) {
	var live int64
	for _, kind := range r.reconciledKinds() {
		n, err := r.cfg.Store.CountResources(ctx, kind)
		if err != nil {
			return false, err
		}
		live += n
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	resp, err := r.cfg.Temporal.CountWorkflow(cctx, &workflowservice.CountWorkflowExecutionsRequest{Query: runningQuery})
	if err != nil {
		return false, fmt.Errorf("count running reconcile workflows: %w", err)
	}
	return resp.GetCount() == live, nil
}

var runningQuery = fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", reconcile.WorkflowName)

// runningWorkflows lists the ids of every running reconcile workflow.
func (r *Relay) runningWorkflows(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	var token []byte
	for {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		resp, err := r.cfg.Temporal.ListWorkflow(cctx, &workflowservice.ListWorkflowExecutionsRequest{Query: runningQuery, PageSize: 1000, NextPageToken: token})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list running reconcile workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			out[e.GetExecution().GetWorkflowId()] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

func resyncOf(kind string, ref store.LiveRef) Delivery {
	return Delivery{Ref: reconcile.Ref{Kind: kind, ID: ref.ID, ParentID: ref.ParentID}, Generation: ref.Generation, Reason: reconcile.ReasonResync, Tenant: ref.Tenant}
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}
