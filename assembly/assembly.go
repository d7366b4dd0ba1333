// Package assembly assembles the whole system in one process: the API with
// its outbox relay, the reconcile worker and adapter workers, all talking to
// one Temporal. `hyperfleet dev` runs it on the embedded Temporal server;
// `hyperfleet serve` runs the API and relay alone (NoWorkers); the
// end-to-end tests run it against real PostgreSQL and kube-apiserver.
package assembly

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/executor"
	adaptermetrics "github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/admission"
	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation"
	"github.com/hyperfleet/hyperfleet/apiserver/reconciliation/guard"
	"github.com/hyperfleet/hyperfleet/apiserver/relay"
	"github.com/hyperfleet/hyperfleet/worker"
	"github.com/hyperfleet/hyperfleet/worker/wake"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// Config of a system.
type Config struct {
	// API configures the API; API.Server.Listen is where it listens
	// ("127.0.0.1:0" picks a free port).
	API apiserver.Options
	// Temporal is the connection every part shares.
	Temporal  client.Client
	Namespace string
	// TemporalUIURL is the Temporal Web UI's base URL: a system caller's
	// reconciliation links the resource's workflow page ("": no link).
	TemporalUIURL string
	// ReconciliationReadsPerSecond bounds the API's reads of Temporal
	// for GET <resource>/reconciliation (0: guard.DefaultPerSecond).
	ReconciliationReadsPerSecond float64
	// Reconcile tunes the workflows the relay starts.
	Reconcile reconcile.Options
	// RelaySweep is the relay's safety-net interval (0: its default).
	RelaySweep time.Duration
	// RelayResyncRate bounds the start-up pass's signals a second (0: its
	// default).
	RelayResyncRate float64
	// RelayHandoffRate bounds the relay's hand-offs a second (0: none).
	RelayHandoffRate float64
	// NoAdmission turns the relay's admission control off;
	// AdmissionHandoffTarget sets its hand-off latency target (0: the
	// default).
	NoAdmission            bool
	AdmissionHandoffTarget time.Duration
	// Adapters to host in-process, with what they share; the API base URL
	// and the logger are the system's own.
	Adapters    []worker.AdapterFiles
	AdapterDeps worker.AdapterDeps
	// NoWorkers leaves the reconciler and adapters to other processes.
	NoWorkers bool
	Logger    zerolog.Logger
}

// System is a running system.
type System struct {
	App     *apiserver.App
	Relay   *relay.Relay
	Workers *worker.Host
	// URL is the API's base URL (http://127.0.0.1:port).
	URL string

	cfg      Config
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	serveErr error
	failed   chan struct{}
}

// Start brings the system up: API listening, relay handing over, workers
// polling. Stop takes it down.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if cfg.Temporal == nil {
		return nil, errors.New("assembly: no Temporal client")
	}
	reads, err := reconciliation.NewSharedReader(&reconciliation.TemporalReader{Client: cfg.Temporal},
		guard.Config{PerSecond: cfg.ReconciliationReadsPerSecond})
	if err != nil {
		return nil, fmt.Errorf("assembly: reconciliation reads: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.API.Server.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.API.Server.Listen, err)
	}
	url := "http://" + loopback(ln.Addr())
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Adapters load before the API touches the database, so a broken one
	// stops start-up before anything is written. Their metrics join the
	// API's registry once it exists.
	loaded, err := loadWorkers(runCtx, cfg, url)
	if err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	app, err := apiserver.Build(ctx, cfg.API)
	if err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	if cfg.API.Server.Tenancy != nil {
		ensureTenantAttribute(ctx, cfg)
	}
	if loaded.metrics != nil {
		loaded.metrics.Register(app.Metrics.Registry)
	}
	if loaded.waker != nil {
		loaded.waker.Register(app.Metrics.Registry)
	}
	s := &System{App: app, cfg: cfg, URL: url, failed: make(chan struct{})}
	s.cancel = cancel

	s.Relay = relay.New(relay.Config{
		Store: app.Store, Temporal: cfg.Temporal, Registered: app.Registered, Optional: app.Optional, Kinds: app.Kinds,
		Options: cfg.Reconcile, Sweep: cfg.RelaySweep, ResyncRate: cfg.RelayResyncRate, HandoffRate: cfg.RelayHandoffRate, NoAdmission: cfg.NoAdmission, Admission: admission.Config{HandoffTarget: cfg.AdmissionHandoffTarget}, Tracer: cfg.API.Server.Tracer,
		Registerer: app.Metrics.Registry, Logger: cfg.Logger.With().Str("component", "relay").Logger(),
	})
	app.Service.OnOutbox(s.Relay.Nudge)
	app.Service.ShowAdmission()
	app.Server.SetReconciliationSource(&apiserver.ReconciliationSource{
		Reader:           reads,
		StartedPerSecond: func() float64 { return s.Relay.Admission().StartedPerSecond },
		UIURL:            cfg.TemporalUIURL, Namespace: cfg.Namespace,
	})
	app.Server.AddReadinessCheck(apiserver.Check{Name: "workflow-engine", Check: s.Relay.Check})
	s.goRun(func() error { return s.Relay.Run(runCtx) })
	s.goRun(func() error { return app.Server.Serve(runCtx, ln) })
	s.goRun(func() error { return s.budgetReads(runCtx, reads) })

	if !cfg.NoWorkers {
		if err := s.startWorkers(loaded.engines); err != nil {
			if stopErr := s.Stop(); stopErr != nil {
				return nil, fmt.Errorf("%w (and stopping what had started: %v)", err, stopErr)
			}
			return nil, err
		}
	}
	return s, nil
}

// budgetReads lowers the budget of the reconciliation endpoint's reads of
// Temporal while the relay holds changes back for admission, and restores
// it once none wait (reconciliation.ReadBudget), checking once a second.
func (s *System) budgetReads(ctx context.Context, reads *reconciliation.SharedReader) error {
	base := s.cfg.ReconciliationReadsPerSecond
	if base <= 0 {
		base = guard.DefaultPerSecond
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			reads.SetPerSecond(reconciliation.ReadBudget(base, s.Relay.Admission().Pending))
		}
	}
}

// loadedWorkers is what the in-process workers need before they start.
type loadedWorkers struct {
	engines []*executor.Engine
	// metrics are the adapters' metrics when the system made them: they
	// join the API's registry.
	metrics *adaptermetrics.Metrics
	waker   *wake.Waker
}

// loadWorkers loads the in-process adapters, calling the API at url as
// system callers; nothing with cfg.NoWorkers. Their watches last as long as
// runCtx.
func loadWorkers(runCtx context.Context, cfg Config, url string) (loadedWorkers, error) {
	var w loadedWorkers
	headers, err := systemHeaders(cfg)
	if err != nil || cfg.NoWorkers {
		return w, err
	}
	deps := cfg.AdapterDeps
	deps.APIBaseURL, deps.Logger = url, cfg.Logger
	deps.APIHeaders = append(deps.APIHeaders, headers...)
	if deps.Metrics == nil {
		deps.Metrics = adaptermetrics.New(nil)
		w.metrics = deps.Metrics
	}
	// Objects the adapters apply are watched: their readiness and drift
	// wake the owning workflow instead of waiting for its timers.
	w.waker = wake.New(0, nil, cfg.Logger.With().Str("component", "wake").Logger())
	w.waker.Attach(cfg.Temporal)
	deps.Changes, deps.WatchContext = w.waker.Notify, runCtx
	if w.engines, err = worker.LoadAdapters(cfg.Adapters, deps); err != nil {
		return loadedWorkers{}, err
	}
	return w, nil
}

// ensureTenantAttribute registers the search attribute workflows of
// tenants' resources start with (HyperFleetTenant), which the reconciler
// registers when it starts; the relay may start one before it does. Not
// fatal: the API's credentials may not allow it, and the relay retries
// until it is registered.
func ensureTenantAttribute(ctx context.Context, cfg Config) {
	sctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := worker.EnsureSearchAttributes(sctx, cfg.Temporal, cfg.Namespace); err != nil {
		cfg.Logger.Warn().Err(err).Msg("search attributes not registered: hand-offs of tenants' resources wait until the reconciler (or an operator) registers HyperFleetTenant")
	}
}

// startWorkers starts the in-process reconciler and adapter workers.
func (s *System) startWorkers(engines []*executor.Engine) error {
	s.warnUnhosted(engines)
	headers, err := systemHeaders(s.cfg)
	if err != nil {
		return err
	}
	api, err := apiclient.New(apiclient.Config{AdapterName: "reconciler", BaseURL: s.URL, Headers: headers, RetryAttempts: 1, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	host, err := worker.Start(worker.Config{
		Client: s.cfg.Temporal, Reconciler: true, API: api, Adapters: engines,
		Logger: s.cfg.Logger.With().Str("component", "worker").Logger(),
	})
	if err != nil {
		return err
	}
	s.Workers = host
	return nil
}

// stopWorkers stops the in-process workers.
func (s *System) stopWorkers() {
	if s.Workers != nil {
		s.Workers.Stop()
		s.Workers = nil
	}
}

// Stop takes everything down and closes the store.
func (s *System) Stop() error {
	s.stopWorkers()
	s.cancel()
	s.wg.Wait()
	err := s.App.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.serveErr, err)
}

// Failed is closed when a background part (the HTTP server, the relay)
// stops with an error; Err says which.
func (s *System) Failed() <-chan struct{} { return s.failed }

// Err is the first failure of a background part, if any.
func (s *System) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serveErr
}

func (s *System) goRun(fn func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.mu.Lock()
			if s.serveErr == nil {
				s.serveErr = err
				close(s.failed)
			}
			s.mu.Unlock()
			s.cfg.Logger.Error().Err(err).Msg("system component stopped")
		}
	}()
}

// systemHeaders are what the in-process reconciler and adapters send to
// be system callers of an API with tenancy: its system header with the
// system secret. An API whose tenancy knows system callers only by their
// tokens cannot be called by in-process workers, which hold none.
func systemHeaders(cfg Config) ([][2]string, error) {
	t := cfg.API.Server.Tenancy
	switch {
	case t == nil || cfg.NoWorkers:
		return nil, nil
	case t.SystemHeader == "":
		return nil, errors.New("assembly: the tenancy file names system callers by token only (system_identities), which in-process workers cannot present; set system_header and system_secret_file, or run the workers as separate processes with --api-token-file")
	}
	header, secret, ok := t.SystemCredential()
	if !ok {
		// A Config built in code: the secret is read as it is validated,
		// which the API does too, later; its errors name the fix.
		if err := t.Validate(cfg.API.Auth.Enabled, cfg.API.Auth.IssuerNames()...); err != nil {
			return nil, fmt.Errorf("tenancy: %w", err)
		}
		if header, secret, ok = t.SystemCredential(); !ok {
			return nil, errors.New("assembly: the tenancy file's system secret was not read")
		}
	}
	return [][2]string{{header, secret}}, nil
}

// loopback names a listener's address the way a local client reaches it.
func loopback(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if tcp.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return tcp.String()
}

// warnUnhosted names registered and optional adapters no loaded adapter
// answers for: their runs would wait on a task queue nobody polls (a
// required adapter's hold its resources back; an optional one's only show
// as errors). The usual cause is a directory named differently from the
// adapter.name in its config.
func (s *System) warnUnhosted(engines []*executor.Engine) {
	hosted := map[string]bool{}
	for _, e := range engines {
		hosted[e.Name()] = true
	}
	for _, set := range []struct {
		what  string
		lists map[string][]string
	}{{"registered", s.App.Registered}, {"optional", s.App.Optional}} {
		for kind, names := range set.lists {
			for _, name := range names {
				if !hosted[name] {
					s.cfg.Logger.Warn().Str("kind", kind).Str("adapter", name).
						Msg(set.what + " adapter has no worker in this process: its runs wait until one polls task queue " + reconcile.AdapterTaskQueue(name) + " (is adapter.name in its adapter-config.yaml the same?)")
				}
			}
		}
	}
}
