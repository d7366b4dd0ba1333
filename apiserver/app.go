package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/apiserver/aggregation"
	"github.com/hyperfleet/hyperfleet/apiserver/auth"
	"github.com/hyperfleet/hyperfleet/apiserver/lifecycle"
	"github.com/hyperfleet/hyperfleet/apiserver/metrics"
	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/apiserver/specschema"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Options assemble a whole API: storage, rules, auth and HTTP.
type Options struct {
	Server Config
	Store  store.Config
	// Registered maps Cluster and NodePool to their adapters.
	Registered map[string][]string
	Auth       auth.Config
	// SpecSchema is the path of an OpenAPI document with ClusterSpec /
	// NodePoolSpec schemas; empty disables spec validation.
	SpecSchema string
	// SkipMigrate leaves the schema alone (run `hyperfleet migrate` instead).
	SkipMigrate bool
	Logger      zerolog.Logger
}

// App is an assembled API.
type App struct {
	Server  *Server
	Store   store.Store
	Service *lifecycle.Service
	Metrics *metrics.Metrics
}

// Build opens the store, migrates it, applies a change of registered
// adapters to stored conditions and wires the HTTP server.
func Build(ctx context.Context, opts Options) (*App, error) {
	for _, kind := range []string{resource.KindCluster, resource.KindNodePool} {
		if _, ok := opts.Registered[kind]; !ok {
			return nil, fmt.Errorf("%s is not set: name the adapters whose reports decide %s readiness, e.g. %s='[\"validation\",\"landing-zone\"]' (an empty list [] is allowed; resources of that kind then never become Ready)",
				aggregation.RegistrationVariable(kind), kind, aggregation.RegistrationVariable(kind))
		}
		if len(opts.Registered[kind]) == 0 {
			opts.Logger.Warn().Str("kind", kind).Msgf("%s is empty: %s resources will never become Ready", aggregation.RegistrationVariable(kind), kind)
		}
	}
	authn, err := auth.New(ctx, opts.Auth)
	if err != nil {
		return nil, err
	}
	var specs lifecycle.SpecValidator
	if opts.SpecSchema != "" {
		v, err := specschema.Load(opts.SpecSchema)
		if err != nil {
			return nil, err
		}
		opts.Logger.Info().Str("file", opts.SpecSchema).Strs("kinds", v.Kinds()).Msg("spec schema validation on")
		specs = v
	}
	opts.Store.Logger = opts.Logger
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
	svc := lifecycle.New(lifecycle.Config{Store: st, Registered: opts.Registered, SpecValidator: specs, Logger: opts.Logger})
	if _, err := svc.SyncRegistration(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("apply registered adapters: %w", err)
	}
	m := metrics.New(st.SQLDB())
	m.WatchFleet(fleetReader(st, opts.Registered))
	srv, err := New(opts.Server, svc, st, authn, m, opts.Logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &App{Server: srv, Store: st, Service: svc, Metrics: m}, nil
}

// Close releases the store.
func (a *App) Close() error { return a.Store.Close() }

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
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// fleetReader reads the fleet gauges: the outbox backlog, and per kind the
// resources not Reconciled (the same query as a search for
// status.conditions.Ready != 'True').
func fleetReader(st store.Store, registered map[string][]string) func(context.Context) (metrics.Fleet, error) {
	kinds := make([]string, 0, len(registered))
	for k := range registered {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
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
			_, n, err := st.ListResources(ctx, store.ListQuery{Kind: k, Where: where, Offset: math.MaxInt32})
			if err != nil {
				return f, err
			}
			f.NotReconciled[k] = n
		}
		return f, nil
	}
}
