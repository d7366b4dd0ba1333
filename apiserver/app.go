package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/conditionrules"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/metrics"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/specschema"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/apiserver/stuck"
	"github.com/hyperfleet/hyperfleet/apiserver/watch"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Options assemble a whole API: storage, rules, auth and HTTP.
type Options struct {
	Server Config
	Store  store.Config
	// Kinds are the resource kinds served; the default kinds (Cluster and
	// NodePool) when nil.
	Kinds *resource.Kinds
	// Registered maps a kind to its adapters; an entry overrides the kind's
	// required_adapters (the HYPERFLEET_<KIND>_ADAPTERS variables).
	Registered map[string][]string
	// Optional maps a kind to its optional adapters; an entry overrides
	// the kind's optional_adapters (HYPERFLEET_<KIND>_OPTIONAL_ADAPTERS).
	Optional map[string][]string
	Auth     auth.Config
	// SpecSchema is the path of an OpenAPI document with the kinds' spec
	// schemas (ClusterSpec, NodePoolSpec, ...); empty disables spec
	// validation.
	SpecSchema string
	// SkipMigrate leaves the schema alone (run `hyperfleet migrate` instead).
	SkipMigrate bool
	// StuckAfter is how long a resource may stay not Reconciled before
	// hyperfleet_reconcile_stuck counts it (default stuck.DefaultAfter).
	StuckAfter time.Duration
	// Watch tunes the watches (caps, buffer, bookmarks, the change log's
	// retention); zero fields take package watch's defaults.
	Watch  watch.Config
	Logger zerolog.Logger
}

// App is an assembled API.
type App struct {
	Server  *Server
	Store   store.Store
	Service *lifecycle.Service
	Metrics *metrics.Metrics
	// Kinds, Registered and Optional are what the API runs with: the
	// relay and workers must use the same. Registered holds each kind's
	// required adapters, Optional the adapters that run without deciding
	// readiness.
	Kinds      *resource.Kinds
	Registered map[string][]string
	Optional   map[string][]string

	Watch *watch.Hub

	stopCompaction func()
}

// Build opens the store, migrates it, applies a change of registered
// adapters to stored conditions and wires the HTTP server.
func Build(ctx context.Context, opts Options) (*App, error) {
	if opts.Kinds == nil {
		opts.Kinds = resource.Defaults()
	}
	adapters, err := Registration(opts.Kinds, opts.Registered, opts.Optional)
	if err != nil {
		return nil, err
	}
	adapters.log(opts.Logger)
	opts.Registered, opts.Optional = adapters.Required, adapters.Optional
	// Condition rules compile once, here: a bad expression stops start-up
	// rather than the first status report.
	rules, err := conditionrules.Compile("", opts.Kinds)
	if err != nil {
		return nil, err
	}
	authn, err := auth.New(ctx, opts.Auth)
	if err != nil {
		return nil, err
	}
	if t := opts.Server.Tenancy; t != nil {
		// A file is validated as it loads; a Config built in code is
		// checked here against the auth it runs with.
		if err := t.Validate(opts.Auth.Enabled, opts.Auth.IssuerNames()...); err != nil {
			return nil, fmt.Errorf("tenancy: %w", err)
		}
	}
	specs, err := specValidator(opts.SpecSchema, opts.Kinds, opts.Logger)
	if err != nil {
		return nil, err
	}
	opts.Store.Logger = opts.Logger
	opts.Store.Kinds = opts.Kinds
	opts.Store.ChangeLog = opts.Watch.Enabled
	st, err := store.Open(ctx, opts.Store)
	if err != nil {
		return nil, err
	}
	if !opts.SkipMigrate {
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	if err := st.Warm(ctx); err != nil {
		// Only the first requests' latency depends on it.
		opts.Logger.Warn().Err(err).Msg("database connections not opened ahead of requests")
	}
	svc := lifecycle.New(lifecycle.Config{Store: st, Registered: opts.Registered, Optional: opts.Optional, SpecValidator: specs, Kinds: opts.Kinds, Rules: rules, Logger: opts.Logger})
	if _, err := svc.SyncRegistration(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("apply registered adapters: %w", err)
	}
	m := metrics.New(st.SQLDB())
	m.WatchFleet(fleetReader(st, opts.Kinds.Names()))
	m.Registry.MustRegister(stuck.NewCollector(st, opts.Registered, opts.StuckAfter))
	srv, err := New(opts.Server, svc, st, authn, m, opts.Logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	compactCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var hub *watch.Hub
	if opts.Watch.Enabled {
		opts.Watch.Logger, opts.Watch.Render = opts.Logger, watchRender(svc)
		hub = watch.NewHub(st, opts.Watch)
		if err := hub.Start(compactCtx); err != nil {
			stop()
			st.Close()
			return nil, fmt.Errorf("start watches: %w", err)
		}
		srv.ServeWatches(hub)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// SQLite keeps its counts in place: nothing to compact.
		if st.Backend() == store.BackendPostgres {
			compactTermCounts(compactCtx, st, termCompactionInterval, m, opts.Logger)
		}
	}()
	return &App{Server: srv, Store: st, Service: svc, Metrics: m, Kinds: opts.Kinds, Registered: opts.Registered, Optional: opts.Optional,
		Watch: hub, stopCompaction: func() {
			stop()
			if hub != nil {
				hub.Wait()
			}
			<-done
		}}, nil
}

// specValidator loads the spec schemas of file (an OpenAPI document), or
// the built-in base schemas when file is empty and some kind requires a
// schema; nil when neither, which turns spec validation off.
func specValidator(file string, kinds *resource.Kinds, log zerolog.Logger) (lifecycle.SpecValidator, error) {
	if file != "" {
		v, err := specschema.LoadFor(file, kinds)
		if err != nil {
			return nil, err
		}
		log.Info().Str("file", file).Strs("kinds", v.Kinds()).Msg("spec schema validation on")
		return v, nil
	}
	if !slices.ContainsFunc(kinds.All(), func(k resource.Kind) bool { return k.RequireSpecSchema }) {
		return nil, nil
	}
	// Kinds that require a spec schema start from the built-in base, as
	// upstream's do.
	v, err := specschema.LoadFor("", kinds)
	if err != nil {
		return nil, err
	}
	log.Info().Strs("kinds", v.Kinds()).Msg("spec schema validation on, with the built-in base schemas")
	return v, nil
}

// termCompactionInterval is how often the API folds appended term-count
// changes (PostgreSQL): a search's total reads the changes not yet
// folded, about a second's worth of writes.
const termCompactionInterval = time.Second

// compactTermCounts runs the store's compaction until ctx ends. A failure
// is logged when it starts and when it ends, not every second.
func compactTermCounts(ctx context.Context, st store.Maintenance, every time.Duration, m *metrics.Metrics, log zerolog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		moved, err := st.CompactTermCounts(ctx)
		if ctx.Err() != nil {
			return
		}
		m.TermCompaction(moved, err)
		switch {
		case err != nil && !failing:
			log.Warn().Err(err).Msg("term counts not compacted; searches stay exact but read more changes until it succeeds")
			failing = true
		case err == nil && failing:
			log.Info().Msg("term counts compacted again")
			failing = false
		}
	}
}

// Adapters are the adapter lists of every kind, as Registration decided
// them, and where each list came from (for the start-up log).
type Adapters struct {
	// Required are the adapters whose reports decide Ready, Reconciled and
	// removal; Optional run and report without deciding anything.
	Required map[string][]string
	Optional map[string][]string
	// requiredFrom and optionalFrom name each list's source.
	requiredFrom map[string]string
	optionalFrom map[string]string
}

// Registration decides each kind's adapters: the override when there is
// one (HYPERFLEET_<KIND>_ADAPTERS, HYPERFLEET_<KIND>_OPTIONAL_ADAPTERS),
// else the kind's required_adapters and optional_adapters. A kind of a
// kinds file that says nothing about required adapters has none, as in
// upstream HyperFleet, whose entities block declares kinds such as Channel
// that way. A built-in kind (no kinds file) without a list stops start-up,
// as an unset HYPERFLEET_CLUSTER_ADAPTERS always has: there no one has
// decided anything about adapters yet, and readiness would be a guess.
func Registration(kinds *resource.Kinds, required, optional map[string][]string) (Adapters, error) {
	for _, overrides := range []map[string][]string{required, optional} {
		for kind := range overrides {
			if _, ok := kinds.Get(kind); !ok {
				return Adapters{}, fmt.Errorf("adapters are registered for kind %s, which is not in the kinds table (%s); add the kind or drop the setting",
					kind, strings.Join(kinds.Names(), ", "))
			}
		}
	}
	out := Adapters{Required: map[string][]string{}, Optional: map[string][]string{},
		requiredFrom: map[string]string{}, optionalFrom: map[string]string{}}
	file := kinds.File()
	for _, k := range kinds.All() {
		names, ok := required[k.Kind]
		from := resource.RegistrationVariable(k.Kind)
		if !ok {
			names, ok = k.RequiredAdapters, k.RequiredAdapters != nil
			from = "required_adapters in " + file
		}
		if !ok && file == "" {
			return Adapters{}, fmt.Errorf("%s is not set: name the adapters whose reports decide %s readiness, e.g. %s='[\"validation\",\"landing-zone\"]' (an empty list [] is allowed; resources of that kind then never become Ready), or set required_adapters in a kinds file (--kinds)",
				resource.RegistrationVariable(k.Kind), k.Kind, resource.RegistrationVariable(k.Kind))
		}
		if !ok {
			from = "no required_adapters in " + file + " and no " + resource.RegistrationVariable(k.Kind)
		}
		out.Required[k.Kind], out.requiredFrom[k.Kind] = append([]string{}, names...), from

		opt, ok := optional[k.Kind]
		from = resource.OptionalVariable(k.Kind)
		if !ok {
			opt, from = k.OptionalAdapters, "optional_adapters in "+file
		}
		for _, a := range opt {
			if slices.Contains(out.Required[k.Kind], a) {
				return Adapters{}, fmt.Errorf("adapter %q of kind %s is both required (%s) and optional (%s): keep it in the required list if readiness waits for it, else only in the optional one",
					a, k.Kind, out.requiredFrom[k.Kind], from)
			}
		}
		if len(opt) > 0 {
			out.Optional[k.Kind], out.optionalFrom[k.Kind] = append([]string{}, opt...), from
		}
	}
	return out, nil
}

// log says, per kind, what its adapter lists mean for its resources.
func (a Adapters) log(log zerolog.Logger) {
	kinds := make([]string, 0, len(a.Required))
	for k := range a.Required {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		if len(a.Required[k]) == 0 {
			log.Warn().Str("kind", k).Str("source", a.requiredFrom[k]).Strs("optional_adapters", a.Optional[k]).
				Msgf("%s has no required adapters: its resources are stored and served but never become Ready or Reconciled, and a DELETE removes them at once (nothing to finalize); to change that, set %s or required_adapters",
					k, resource.RegistrationVariable(k))
		}
		if len(a.Optional[k]) > 0 {
			log.Info().Str("kind", k).Str("source", a.optionalFrom[k]).Strs("optional_adapters", a.Optional[k]).
				Msgf("%s has optional adapters: they run every round and report, but never decide Ready, Reconciled or removal", k)
		}
	}
}

// Close releases the store.
func (a *App) Close() error {
	if a.stopCompaction != nil {
		a.stopCompaction()
	}
	return a.Store.Close()
}

// ParseAdapterList reads a registered-adapter list: a JSON array
// (["validation","landing-zone"]) or a comma-separated list.
func ParseAdapterList(value string) ([]string, error) {
	value = strings.TrimSpace(value)
	var names []string
	if strings.HasPrefix(value, "[") {
		if err := json.Unmarshal([]byte(value), &names); err != nil {
			return nil, fmt.Errorf("not a JSON array of strings: %w", err)
		}
	} else if value != "" {
		names = strings.Split(value, ",")
	}
	out := make([]string, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, errors.New("adapter names must not be empty")
		}
		if seen[n] {
			return nil, fmt.Errorf("adapter %q is listed twice", n)
		}
		if err := resource.CheckAdapterName(n); err != nil {
			return nil, fmt.Errorf("%w: no status report could name it, so its resources could never be Ready", err)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// fleetStore is what the fleet gauges read.
type fleetStore interface {
	store.Outbox
	store.Resources
}

// fleetReader reads the fleet gauges: the outbox backlog, and per kind the
// resources not Reconciled (the same query as a search for
// status.conditions.Ready != 'True').
func fleetReader(st fleetStore, kinds []string) func(context.Context) (metrics.Fleet, error) {
	return func(ctx context.Context) (metrics.Fleet, error) {
		var f metrics.Fleet
		var err error
		if f.OutboxPending, f.OutboxOldest, err = st.OutboxBacklog(ctx); err != nil {
			return f, err
		}
		where, err := search.Translate("status.conditions.Ready != 'True'", st.Dialect(), search.Options{Table: "resources"})
		if err != nil {
			return f, err
		}
		f.NotReconciled = map[string]int64{}
		for _, k := range kinds {
			// An offset past any total makes the list a count.
			page, err := st.ListResources(ctx, store.ListQuery{Kind: k, Where: where, Offset: math.MaxInt32})
			if err != nil {
				return f, err
			}
			f.NotReconciled[k] = page.Total
		}
		return f, nil
	}
}
