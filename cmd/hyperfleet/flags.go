package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/apiserver"
	"github.com/hyperfleet/hyperfleet/apiserver/conditionrules"
	"github.com/hyperfleet/hyperfleet/apiserver/store"
	"github.com/hyperfleet/hyperfleet/resource"
	"github.com/hyperfleet/hyperfleet/resource/kindsfile"
)

// EnvPrefix prefixes the environment variable of every flag.
const EnvPrefix = "HYPERFLEET_"

// envName is the environment variable of a flag: --db-url -> HYPERFLEET_DB_URL.
func envName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// bindEnv fills every flag not given on the command line from its
// environment variable, and names the variable in the flag's help.
func bindEnv(cmd *cobra.Command) error {
	var errs []string
	visit := func(f *pflag.Flag) {
		name := envName(f.Name)
		if !strings.Contains(f.Usage, name) {
			f.Usage += " [" + name + "]"
		}
		if f.Changed {
			return
		}
		if v, ok := os.LookupEnv(name); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q: %v", name, v, err))
				return
			}
			f.Changed = true
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(errs) > 0 {
		return fmt.Errorf("invalid environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

type logFlags struct {
	level  string
	format string
}

var logOpts logFlags

func addLogFlags(root *cobra.Command) {
	root.PersistentFlags().StringVar(&logOpts.level, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&logOpts.format, "log-format", "auto", "log format: json, console, or auto (console on a terminal)")
}

func newLogger(out io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(logOpts.level)
	if err != nil || logOpts.level == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: use debug, info, warn or error", logOpts.level)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	w := out
	switch logOpts.format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000"}
	case "auto":
		if f, ok := out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			w = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000"}
		}
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: use json, console or auto", logOpts.format)
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// dbFlags configure the store, shared by serve, migrate and dev.
type dbFlags struct {
	driver   string
	url      string
	stateDir string
	maxOpen  int
	slow     time.Duration
}

func (d *dbFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&d.driver, "db-driver", store.BackendSQLite, "database: sqlite (embedded default) or postgres")
	fs.StringVar(&d.url, "db-url", "", "PostgreSQL URL (postgres://user:pass@host:5432/db?sslmode=...) or SQLite file path (default <state-dir>/hyperfleet.db)")
	fs.StringVar(&d.stateDir, "state-dir", ".hyperfleet", "directory for local state (the SQLite database, the embedded Temporal server's files)")
	fs.IntVar(&d.maxOpen, "db-max-open-conns", 20, "maximum open database connections")
	fs.DurationVar(&d.slow, "db-slow-query", 500*time.Millisecond, "log statements slower than this")
}

func (d *dbFlags) config() (store.Config, error) {
	cfg := store.Config{Driver: d.driver, URL: d.url, MaxOpenConns: d.maxOpen, SlowQuery: d.slow}
	switch d.driver {
	case store.BackendSQLite:
		if cfg.URL == "" {
			cfg.URL = d.stateDir + "/hyperfleet.db"
		}
	case store.BackendPostgres:
		if cfg.URL == "" {
			return cfg, fmt.Errorf("--db-driver=postgres needs --db-url (or %s)", envName("db-url"))
		}
	default:
		return cfg, fmt.Errorf("--db-driver %q: use sqlite or postgres", d.driver)
	}
	return cfg, nil
}

// adapterFlags register the adapters that decide readiness, and the
// optional ones that run without deciding it.
type adapterFlags struct {
	cluster          string
	nodePool         string
	clusterOptional  string
	nodePoolOptional string
}

func (a *adapterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&a.cluster, "cluster-adapters", "", `adapters whose reports decide cluster readiness: JSON array ["validation","landing-zone"] or a comma list (required without --kinds; [] allowed)`)
	fs.StringVar(&a.nodePool, "nodepool-adapters", "", "adapters whose reports decide node pool readiness (required without --kinds; [] allowed)")
	fs.StringVar(&a.clusterOptional, "cluster-optional-adapters", "", "adapters that run for every cluster and report, but never decide its readiness or removal (same forms)")
	fs.StringVar(&a.nodePoolOptional, "nodepool-optional-adapters", "", "adapters that run for every node pool and report, but never decide its readiness or removal")
}

// registered parses the lists: the required adapters per kind, and the
// optional ones. A list that was never set (flag or environment) is left
// out, so the kind's required_adapters and optional_adapters apply (and a
// built-in kind without required adapters stops start-up with a clear
// message). Kinds beyond the defaults have no flags:
// HYPERFLEET_<KIND>_ADAPTERS and HYPERFLEET_<KIND>_OPTIONAL_ADAPTERS alone
// override theirs.
func (a *adapterFlags) registered(fs *pflag.FlagSet, kinds *resource.Kinds) (required, optional map[string][]string, err error) {
	required, optional = map[string][]string{}, map[string][]string{}
	for _, kind := range kinds.Names() {
		if kind == resource.KindCluster || kind == resource.KindNodePool {
			continue
		}
		for _, v := range []struct {
			name string
			into map[string][]string
		}{{resource.RegistrationVariable(kind), required}, {resource.OptionalVariable(kind), optional}} {
			value, ok := os.LookupEnv(v.name)
			if !ok {
				continue
			}
			names, err := apiserver.ParseAdapterList(value)
			if err != nil {
				return nil, nil, fmt.Errorf("%s %q: %w", v.name, value, err)
			}
			v.into[kind] = names
		}
	}
	for _, item := range []struct {
		flag, kind, value string
		into              map[string][]string
	}{
		{"cluster-adapters", resource.KindCluster, a.cluster, required},
		{"nodepool-adapters", resource.KindNodePool, a.nodePool, required},
		{"cluster-optional-adapters", resource.KindCluster, a.clusterOptional, optional},
		{"nodepool-optional-adapters", resource.KindNodePool, a.nodePoolOptional, optional},
	} {
		if !fs.Changed(item.flag) {
			continue
		}
		names, err := apiserver.ParseAdapterList(item.value)
		if err != nil {
			return nil, nil, fmt.Errorf("%s (--%s) %q: %w", envName(item.flag), item.flag, item.value, err)
		}
		item.into[item.kind] = names
	}
	return required, optional, nil
}

// kindsFlag names the kinds file; HYPERFLEET_KINDS_FILE is its variable.
type kindsFlag struct{ file string }

const kindsFileVariable = EnvPrefix + "KINDS_FILE"

func (k *kindsFlag) add(fs *pflag.FlagSet) {
	fs.StringVar(&k.file, "kinds", "", "YAML kinds file (entities:) declaring the resource kinds to serve; default Cluster and NodePool ["+kindsFileVariable+"]")
}

// load reads the kinds file, or returns the default kinds without one.
func (k *kindsFlag) load(fs *pflag.FlagSet, log zerolog.Logger) (*resource.Kinds, error) {
	file := k.file
	if !fs.Changed("kinds") {
		file = os.Getenv(kindsFileVariable)
	}
	if file == "" {
		return resource.Defaults(), nil
	}
	t, err := kindsfile.Load(file)
	if err != nil {
		return nil, err
	}
	// Compile the condition rules now too, so a bad expression is reported
	// with the file's name and line.
	if _, err := conditionrules.Compile(file, t.Kinds); err != nil {
		return nil, err
	}
	for _, w := range t.Warnings {
		log.Warn().Str("file", file).Msg(w)
	}
	log.Info().Str("file", file).Strs("kinds", t.Names()).Msg("kinds file loaded")
	return t.Kinds, nil
}

// bindEnvPreRun lets every command take its flags from HYPERFLEET_* too.
func bindEnvPreRun(cmd *cobra.Command, _ []string) error { return bindEnv(cmd) }

// withLogger builds the logger from the global log flags before running fn.
func withLogger(fn func(ctx context.Context, log zerolog.Logger) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		log, err := newLogger(os.Stderr)
		if err != nil {
			return err
		}
		return fn(cmd.Context(), log)
	}
}

// maestroFlags override every Maestro adapter's clients.maestro block
// (flags over HYPERFLEET_MAESTRO_* over the file), so one worker setting
// points all of them at a server without editing their configs.
type maestroFlags struct {
	o        maestrotransport.Overrides
	insecure bool
}

func (m *maestroFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&m.o.GRPCAddress, "maestro-grpc-server-address", "", "Maestro gRPC address (host:port) for every Maestro adapter")
	fs.StringVar(&m.o.HTTPAddress, "maestro-http-server-address", "", "Maestro REST address (https://host:port) for every Maestro adapter")
	fs.StringVar(&m.o.SourceID, "maestro-source-id", "", "Maestro source id (default: each adapter's clients.maestro.source_id, else its name)")
	fs.StringVar(&m.o.CAFile, "maestro-ca-file", "", "CA that verifies the Maestro server")
	fs.StringVar(&m.o.CertFile, "maestro-cert-file", "", "client certificate for Maestro (mutual TLS)")
	fs.StringVar(&m.o.KeyFile, "maestro-key-file", "", "client key for Maestro (mutual TLS)")
	fs.StringVar(&m.o.TokenFile, "maestro-token-file", "", "bearer token file for Maestro")
	fs.StringVar(&m.o.HTTPCAFile, "maestro-http-ca-file", "", "CA for Maestro's REST address, when it differs from --maestro-ca-file")
	fs.StringVar(&m.o.ServerName, "maestro-server-name", "", "TLS server name to verify on Maestro")
	fs.BoolVar(&m.insecure, "maestro-insecure", false, "plaintext gRPC and http:// REST to Maestro (local servers only)")
	fs.DurationVar(&m.o.Timeout, "maestro-timeout", 0, "per-call timeout to Maestro (default: the adapter's, else 10s)")
	fs.DurationVar(&m.o.ServerHealthinessTimeout, "maestro-server-healthiness-timeout", 0, "how long Maestro may be unreachable before a round reports it")
}

// overrides returns the settings given (after the environment is bound).
func (m *maestroFlags) overrides(fs *pflag.FlagSet) maestrotransport.Overrides {
	o := m.o
	if fs.Changed("maestro-insecure") {
		v := m.insecure
		o.Insecure = &v
	}
	return o
}
