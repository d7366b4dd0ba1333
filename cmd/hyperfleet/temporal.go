package main

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation/guard"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// temporalFlags locate an external Temporal (serve and worker).
type temporalFlags struct {
	cfg temporalclient.Config
}

func (t *temporalFlags) add(fs *pflag.FlagSet, defaultAddress string) {
	fs.StringVar(&t.cfg.Address, "temporal-address", defaultAddress, "Temporal frontend host:port")
	fs.StringVar(&t.cfg.Namespace, "temporal-namespace", "default", "Temporal namespace of the reconcile workflows")
	fs.BoolVar(&t.cfg.TLS.Enabled, "temporal-tls", false, "connect to Temporal over TLS (implied by the other --temporal-tls-* flags)")
	fs.StringVar(&t.cfg.TLS.CAFile, "temporal-tls-ca", "", "PEM file of the CA that signed Temporal's certificate (default: system roots)")
	fs.StringVar(&t.cfg.TLS.CertFile, "temporal-tls-cert", "", "PEM client certificate for mutual TLS")
	fs.StringVar(&t.cfg.TLS.KeyFile, "temporal-tls-key", "", "PEM key of the client certificate")
	fs.StringVar(&t.cfg.TLS.ServerName, "temporal-tls-server-name", "", "name to verify in Temporal's certificate (default: the address's host)")
	fs.StringVar(&t.cfg.APIKey, "temporal-api-key", "", "API key for Temporal Cloud (implies TLS)")
}

// reconcileFlags tune the workflows the relay starts.
type reconcileFlags struct {
	opts       reconcile.Options
	sweep      time.Duration
	resyncRate float64
	handoff    float64
	admission  bool
	// handoffTarget is admission control's hand-off latency target: a
	// hidden setting for measurements (the default is derived from
	// Temporal's own one-second deadline).
	handoffTarget time.Duration
	// reconciliationReads bounds the API's reads of Temporal a second
	// for GET <resource>/reconciliation.
	reconciliationReads float64
}

func (r *reconcileFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&r.opts.StabilityWindow, "stability-window", 30*time.Minute, "re-run the adapters of a Reconciled resource this long after its last round when something they apply is not watched (the safety net that finds drift)")
	fs.DurationVar(&r.opts.WatchedStabilityWindow, "watched-stability-window", reconcile.DefaultWatchedStabilityWindow, "the same wait when everything its adapters apply is watched: watches repair drift within seconds, this round only catches what a watch missed (never shorter than --stability-window)")
	fs.DurationVar(&r.opts.InitialBackoff, "reconcile-backoff", time.Second, "first wait before re-running a resource that is not Reconciled; doubles per round")
	fs.DurationVar(&r.opts.MaxBackoff, "reconcile-backoff-max", time.Minute, "longest wait between rounds of a resource that is not Reconciled")
	fs.DurationVar(&r.opts.HeartbeatTimeout, "activity-heartbeat-timeout", 20*time.Second, "how long an adapter activity may go silent before Temporal retries it on another worker")
	fs.Float64Var(&r.opts.StabilityJitter, "stability-jitter", 0.1, "spread self-healing rounds over ± this fraction of the stability window (negative: none)")
	fs.DurationVar(&r.sweep, "relay-sweep", time.Minute, "re-read the outbox this often as a safety net for rows another API replica left behind (negative disables)")
	fs.Float64Var(&r.handoff, "relay-handoff-rate", 0, "a hard cap on hand-offs a second from this API replica to Temporal, on top of admission control (0: none)")
	fs.DurationVar(&r.handoffTarget, "relay-admission-handoff-target", 0, "admission control's hand-off latency target (0: the default, 250ms)")
	_ = fs.MarkHidden("relay-admission-handoff-target")
	fs.BoolVar(&r.admission, "relay-admission", true, "admission control: hand changes to Temporal only as fast as it keeps up, keeping the rest in the outbox (off: every change at once, which a large burst turns into lost dispatches; for measurements)")
	fs.Float64Var(&r.reconciliationReads, "reconciliation-reads-per-second", guard.DefaultPerSecond, "most reads of Temporal a second this API replica makes for GET <resource>/reconciliation (callers of one resource within a second share one; a tenth of it, at least 1, while changes wait for admission); a read beyond waits up to 1s, then answers 503 with a Retry-After (1s to 30s) that grows with the refusals")
	fs.Float64Var(&r.resyncRate, "relay-resync-rate", 200, "signals per second when a changed adapter registration or reconcile setting is handed to every workflow at start-up")
}

// validate refuses settings that would otherwise be taken silently as a
// default: a negative window or backoff is a typo, not a wish.
func (r *reconcileFlags) validate() error {
	// Env values arrive through the flags (bindEnv), so naming both covers
	// either source.
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"stability-window", r.opts.StabilityWindow},
		{"watched-stability-window", r.opts.WatchedStabilityWindow},
		{"reconcile-backoff", r.opts.InitialBackoff},
		{"reconcile-backoff-max", r.opts.MaxBackoff},
		{"activity-heartbeat-timeout", r.opts.HeartbeatTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("--%s (%s) %s: must not be negative; give a positive duration such as 30m, or 0 for the default", d.flag, envName(d.flag), d.v)
		}
	}
	if r.opts.InitialBackoff > 0 && r.opts.MaxBackoff > 0 && r.opts.InitialBackoff > r.opts.MaxBackoff {
		return fmt.Errorf("--reconcile-backoff %s is longer than --reconcile-backoff-max %s: lower the first or raise the second", r.opts.InitialBackoff, r.opts.MaxBackoff)
	}
	if r.opts.StabilityJitter > 0.5 {
		return fmt.Errorf("--stability-jitter %g: at most 0.5 (±50%% of the window); a negative value turns jitter off", r.opts.StabilityJitter)
	}
	if r.handoff < 0 {
		return fmt.Errorf("--relay-handoff-rate %g: must not be negative; 0 means no limit", r.handoff)
	}
	if !(r.reconciliationReads > 0) || math.IsInf(r.reconciliationReads, 1) { // NaN is not > 0
		return fmt.Errorf("--reconciliation-reads-per-second (%s) %g: must be positive, such as the default %d; the endpoint's reads of Temporal are always bounded, so that its callers cannot slow reconciling",
			envName("reconciliation-reads-per-second"), r.reconciliationReads, guard.DefaultPerSecond)
	}
	if r.resyncRate < 0 {
		return fmt.Errorf("--relay-resync-rate %g: must not be negative; 0 means the default, 200", r.resyncRate)
	}
	return nil
}
