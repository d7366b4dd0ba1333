package main

import (
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/request"
	"github.com/hyperfleet/hyperfleet/apiserver/stuck"
	"github.com/hyperfleet/hyperfleet/apiserver/tenancy"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
	"github.com/hyperfleet/hyperfleet/assembly"
	"github.com/hyperfleet/hyperfleet/internal/temporalclient"
	"github.com/hyperfleet/hyperfleet/internal/version"
)

// apiFlags configure the HTTP API.
type apiFlags struct {
	listen          string
	bodyLimit       int64
	specLimit       int64
	statusDataLimit int64
	requestTimeout  time.Duration
	readHeader      time.Duration
	readTimeout     time.Duration
	shutdownGrace   time.Duration
	shutdownTimeout time.Duration
	specSchema      string
	skipMigrate     bool
	stuckAfter      time.Duration
	watch           watch.Config
	pprofListen     string
	jwt             auth.Config
	jwtIssuersFile  string
	tenancyFile     string
	db              dbFlags
	adapters        adapterFlags
	kinds           kindsFlag
}

// serveFlags are the API's plus the hand-off to Temporal.
type serveFlags struct {
	api       apiFlags
	temporal  temporalFlags
	reconcile reconcileFlags
	tracing   tracingFlags
	// temporalUIURL links a system caller's reconciliation to its
	// workflow's page in the Temporal Web UI.
	temporalUIURL string
}

func (a *apiFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&a.listen, "listen", ":8000", "address of the API")
	fs.Int64Var(&a.bodyLimit, "body-limit", request.DefaultBodyLimit, "maximum request body size in bytes")
	fs.Int64Var(&a.specLimit, "spec-limit", request.DefaultSpecLimit, "maximum size in bytes of one cluster or node pool spec; bounds the memory of list responses")
	fs.Int64Var(&a.statusDataLimit, "status-data-limit", request.DefaultStatusDataLimit, "maximum size in bytes of a status report's data, and of its metadata; bounds the memory of status lists")
	fs.DurationVar(&a.requestTimeout, "request-timeout", 30*time.Second, "maximum time to serve one request")
	fs.DurationVar(&a.readHeader, "read-header-timeout", apiserver.DefaultReadHeaderTimeout, "time a client has to send a request's line and headers; a slower one is disconnected")
	fs.DurationVar(&a.readTimeout, "read-timeout", apiserver.DefaultReadTimeout, "time a client has to send a whole request, body included (408 or disconnected beyond)")
	fs.DurationVar(&a.shutdownGrace, "shutdown-grace", 0, "on SIGTERM, report not-ready for this long before closing the listener")
	fs.DurationVar(&a.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, wait this long for in-flight requests")
	fs.StringVar(&a.specSchema, "spec-schema", "", "OpenAPI document with ClusterSpec/NodePoolSpec schemas to validate specs against")
	fs.BoolVar(&a.skipMigrate, "skip-migrate", false, "do not apply schema migrations at start-up (run 'hyperfleet migrate' instead)")
	fs.DurationVar(&a.stuckAfter, "reconcile-stuck-after", stuck.DefaultAfter, "count a resource in hyperfleet_reconcile_stuck once it has not been Reconciled for this long")
	fs.BoolVar(&a.watch.Enabled, "watch", true, "serve watches (GET ...?watch=true) and write the change log they read; set the same on every API replica (--watch=false writes no log: docs/operator-guide.md, \"Watches\")")
	fs.IntVar(&a.watch.MaxWatchers, "watch-max", watch.DefaultMaxWatchers, "most watches (GET ...?watch=true) this replica serves at once; more are refused with 503")
	fs.IntVar(&a.watch.MaxPerTenant, "watch-max-per-tenant", watch.DefaultMaxPerTenant, "with --tenancy-file, most watches one tenancy holds on this replica at once; more are refused with 429")
	fs.IntVar(&a.watch.Buffer, "watch-buffer", watch.DefaultBuffer, "changes a watcher may fall behind before it is closed with an ERROR event (it then resumes)")
	fs.DurationVar(&a.watch.Bookmark, "watch-bookmark-interval", watch.DefaultBookmark, "how often a watch is sent a BOOKMARK event, which keeps idle streams open through proxies")
	fs.DurationVar(&a.watch.Retention, "watch-retention", watch.DefaultRetention, "how long the change log keeps changes: a watch resumes from a version this recent, an older one is 410 Gone")
	fs.Int64Var(&a.watch.RetentionRows, "watch-retention-rows", watch.DefaultRetentionRows, "most changes the change log keeps, however recent")
	fs.StringVar(&a.pprofListen, "pprof-listen", "", "serve Go's /debug/pprof on this address (e.g. 127.0.0.1:6060); off by default")
	fs.BoolVar(&a.jwt.Enabled, "jwt-enabled", false, "require JWT bearer tokens")
	fs.StringVar(&a.jwt.Issuer, "jwt-issuer", "", "required token issuer (iss)")
	fs.StringVar(&a.jwt.JWKSURL, "jwt-jwks-url", "", "URL of the JWKS that verifies tokens")
	fs.StringVar(&a.jwt.JWKSFile, "jwt-jwks-file", "", "file holding the JWKS that verifies tokens")
	fs.StringVar(&a.jwt.Audience, "jwt-audience", "", "required token audience (aud)")
	fs.StringVar(&a.jwt.IdentityClaim, "jwt-identity-claim", "email", "claim that names the caller (created_by/updated_by)")
	fs.BoolVar(&a.jwt.ProtectService, "jwt-protect-service", false, "with --jwt-enabled, require a token on /metrics and /api/hyperfleet too")
	fs.StringVar(&a.jwtIssuersFile, "jwt-issuers-file", "", "YAML file listing more trusted token issuers (issuers: [{issuer, jwks_url or jwks_file, audience, identity_claim, ca_file}])")
	fs.StringVar(&a.jwt.CAFile, "jwt-ca-file", "", "PEM file of the CA that verifies JWKS URLs served over TLS (default: the system roots)")
	fs.DurationVar(&a.jwt.ClockSkew, "jwt-clock-skew", 30*time.Second, "how far an issuer's clock may be from this one (exp, nbf, iat)")
	fs.DurationVar(&a.jwt.MaxTokenLifetime, "jwt-max-token-lifetime", auth.DefaultMaxTokenLifetime, "refuse tokens valid for longer than this after they were issued (negative: no bound)")
	fs.StringVar(&a.tenancyFile, "tenancy-file", "", "YAML tenancy file (system_header with system_secret_file, system_identities, dimensions): scope every resource by tenant and give callers roles; off without it")
	a.db.add(fs)
	a.adapters.add(fs)
	a.kinds.add(fs)
}

func (a *apiFlags) options(cmd *cobra.Command, log zerolog.Logger) (apiserver.Options, error) {
	if err := a.checkWatch(); err != nil {
		return apiserver.Options{}, err
	}
	storeCfg, err := a.db.config()
	if err != nil {
		return apiserver.Options{}, err
	}
	kinds, err := a.kinds.load(cmd.Flags(), log)
	if err != nil {
		return apiserver.Options{}, err
	}
	registered, optional, err := a.adapters.registered(cmd.Flags(), kinds)
	if err != nil {
		return apiserver.Options{}, err
	}
	jwt := a.jwt
	if a.jwtIssuersFile != "" {
		if jwt.Issuers, err = auth.LoadIssuers(a.jwtIssuersFile); err != nil {
			return apiserver.Options{}, err
		}
	}
	var tc *tenancy.Config
	if a.tenancyFile != "" {
		if tc, err = tenancy.Load(a.tenancyFile, jwt.Enabled, jwt.IssuerNames()...); err != nil {
			return apiserver.Options{}, err
		}
		keys := make([]string, 0, len(tc.Dimensions))
		for _, d := range tc.Dimensions {
			keys = append(keys, d.Key+" ("+d.Source()+")")
		}
		log.Info().Str("file", a.tenancyFile).Strs("dimensions", keys).Str("system_header", tc.SystemHeader).Str("system_secret_file", tc.SystemSecretFile).
			Int("system_identities", len(tc.SystemIdentities)).Msg("tenancy on: resources are scoped by tenant")
	}
	return apiserver.Options{
		Server: apiserver.Config{
			Listen: a.listen, BodyLimit: a.bodyLimit, SpecLimit: a.specLimit, StatusDataLimit: a.statusDataLimit, RequestTimeout: a.requestTimeout,
			ReadHeaderTimeout: a.readHeader, ReadTimeout: a.readTimeout,
			ShutdownGrace: a.shutdownGrace, ShutdownTimeout: a.shutdownTimeout,
			Version: version.Version, BuildTime: version.BuildTime, Tenancy: tc,
		},
		Store:       storeCfg,
		Kinds:       kinds,
		Registered:  registered,
		Optional:    optional,
		Auth:        jwt,
		SpecSchema:  a.specSchema,
		SkipMigrate: a.skipMigrate, StuckAfter: a.stuckAfter,
		Watch: a.watch,
	}, nil
}

// checkWatch refuses watch settings that cannot work (a zero would
// otherwise quietly mean the default).
func (a *apiFlags) checkWatch() error {
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"--watch-max", a.watch.MaxWatchers >= 1}, {"--watch-max-per-tenant", a.watch.MaxPerTenant >= 1},
		{"--watch-buffer", a.watch.Buffer >= 1}, {"--watch-bookmark-interval", a.watch.Bookmark >= time.Second},
		{"--watch-retention", a.watch.Retention >= time.Minute}, {"--watch-retention-rows", a.watch.RetentionRows >= 1},
	} {
		if !f.ok {
			return fmt.Errorf("%s is out of range: counts must be at least 1, the bookmark interval at least 1s and the retention at least 1m", f.name)
		}
	}
	return nil
}

func newServeCommand() *cobra.Command {
	var flags serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HyperFleet API and its hand-off to Temporal",
		Long: `Run the HyperFleet REST API (Gin) with health on /healthz and /readyz and
Prometheus metrics on /metrics. Schema migrations run at start-up.

With --temporal-address, every generation bump is handed to Temporal through
the outbox: the relay starts or signals the resource's reconcile workflow,
retries while Temporal is unreachable (writes keep succeeding) and, at
start-up, makes sure every live resource has a workflow. /readyz then reports
"workflow-engine" next to "database". Run the workflows and adapters with
'hyperfleet worker'.

HYPERFLEET_CLUSTER_ADAPTERS and HYPERFLEET_NODEPOOL_ADAPTERS must be set.
With --kinds, every kind of the file is served with its required_adapters
(HYPERFLEET_<KIND>_ADAPTERS overrides them); a kind that has neither has no
required adapters and never becomes Ready. Optional adapters
(optional_adapters, HYPERFLEET_<KIND>_OPTIONAL_ADAPTERS) run and report
without deciding readiness or removal.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			return flags.reconcile.validate()
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, &flags) },
	}
	flags.api.add(cmd)
	flags.temporal.add(cmd.Flags(), "")
	flags.reconcile.add(cmd.Flags())
	flags.tracing.add(cmd.Flags(), "hyperfleet-api")
	cmd.Flags().StringVar(&flags.temporalUIURL, "temporal-ui-url", "", "base URL of the Temporal Web UI: a system caller's GET <resource>/reconciliation links the resource's workflow page there")
	return cmd
}

// runServe runs the API; with a Temporal address, its relay too.
func runServe(cmd *cobra.Command, f *serveFlags) error {
	log, err := newLogger(os.Stderr)
	if err != nil {
		return err
	}
	opts, err := f.api.options(cmd, log)
	if err != nil {
		return err
	}
	opts.Logger = log
	ctx := cmd.Context()
	tr, err := f.tracing.setup(ctx, log)
	if err != nil {
		return err
	}
	defer shutdownTracing(ctx, tr, log)
	if tr.Enabled() {
		opts.Server.Tracer = tr.Provider
	}
	startPprof(f.api.pprofListen, log)
	log.Info().Str("version", version.Version).Str("db", opts.Store.Driver).
		Strs("kinds", opts.Kinds.Names()).Strs("cluster_adapters", opts.Registered["Cluster"]).Strs("nodepool_adapters", opts.Registered["NodePool"]).
		Strs("cluster_optional_adapters", opts.Optional["Cluster"]).Strs("nodepool_optional_adapters", opts.Optional["NodePool"]).
		Bool("jwt", opts.Auth.Enabled).Str("temporal", f.temporal.cfg.Address).Msg("starting HyperFleet API")
	if f.temporal.cfg.Address == "" {
		log.Warn().Msg("no --temporal-address: changes are recorded in the outbox but nothing reconciles them until the API runs with one")
		app, err := apiserver.Build(ctx, opts)
		if err != nil {
			return err
		}
		defer app.Close()
		return app.Server.Run(ctx)
	}
	tcfg := f.temporal.cfg
	if tr.Enabled() {
		tcfg.Tracer = tr.Provider
	}
	tc, err := temporalclient.Dial(tcfg, log.With().Str("component", "temporal").Logger())
	if err != nil {
		return err
	}
	defer tc.Close()
	s, err := assembly.Start(ctx, assembly.Config{
		API: opts, Temporal: tc, Namespace: f.temporal.cfg.Namespace, TemporalUIURL: f.temporalUIURL, NoWorkers: true, ReconciliationReadsPerSecond: f.reconcile.reconciliationReads,
		Reconcile: f.reconcile.opts, RelaySweep: f.reconcile.sweep, RelayResyncRate: f.reconcile.resyncRate, RelayHandoffRate: f.reconcile.handoff, NoAdmission: !f.reconcile.admission, AdmissionHandoffTarget: f.reconcile.handoffTarget, Logger: log,
	})
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.Failed():
	}
	return s.Stop()
}
