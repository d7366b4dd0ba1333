package worker

import (
	"context"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"
	"k8s.io/client-go/rest"

	"github.com/hyperfleet/hyperfleet/adapter/apiclient"
	"github.com/hyperfleet/hyperfleet/adapter/executor"
	"github.com/hyperfleet/hyperfleet/adapter/metrics"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	kubetransport "github.com/hyperfleet/hyperfleet/adapter/transport/kubernetes"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
	"github.com/hyperfleet/hyperfleet/internal/tlsfiles"
)

// AdapterFiles locates one adapter's configuration.
type AdapterFiles struct {
	Config     string
	TaskConfig string
	// Mounts maps directories that manifest refs name to local ones.
	Mounts map[string]string
}

// AdapterDeps is what every adapter hosted by a worker shares.
type AdapterDeps struct {
	// APIBaseURL, when set, overrides clients.hyperfleet_api.base_url.
	APIBaseURL string
	// APITokenFile, when set, overrides clients.hyperfleet_api.auth's
	// token file: the bearer token every adapter calls the API with (a
	// system identity's, when the API runs with tenancy).
	APITokenFile string
	// APIHeaders are sent with every call an adapter makes to the API,
	// and to no other origin (the system header of gateway-style
	// tenancy, carrying the system secret).
	APIHeaders [][2]string
	// Kube returns the cluster Kubernetes resources are applied to; it is
	// called only for adapters that need one. Nil means none is configured
	// and KubeMissing says how to configure one.
	Kube        func() (*rest.Config, error)
	KubeMissing string
	Metrics     *metrics.Metrics
	Logger      zerolog.Logger
	// Changes, when set, receives every change to an object an adapter
	// applied (its Kubernetes transport watches them until WatchContext
	// ends; its Maestro client watches the agents' status reports): the
	// worker wakes the owning resource's workflow with it.
	Changes      func(transport.Change)
	WatchContext context.Context
	// Maestro overrides every Maestro adapter's clients.maestro settings
	// (the worker's --maestro-* flags), over HYPERFLEET_MAESTRO_*.
	Maestro maestrotransport.Overrides
	// MaestroClients are the Maestro clients adapters share, one per
	// settings. Nil: LoadAdapters makes one set for the adapters it loads;
	// LoadAdapter, one for its adapter.
	MaestroClients *maestrotransport.Clients
}

// LoadAdapter reads, validates and wires one adapter. Every problem in the
// files is reported at once with file, line and fix; an adapter whose
// resources need a transport this worker cannot offer is refused here, not
// at its first reconcile.
func LoadAdapter(files AdapterFiles, deps AdapterDeps) (*executor.Engine, error) {
	b, problems := taskconfig.Load(files.Config, files.TaskConfig, taskconfig.Options{Mounts: files.Mounts})
	if err := problems.Err(); err != nil {
		return nil, fmt.Errorf("adapter %s:\n%w", files.TaskConfig, err)
	}
	name := b.Adapter.Adapter.Name
	api, err := apiClient(b, deps)
	if err != nil {
		return nil, fmt.Errorf("adapter %s (%s): %w", name, b.AdapterFile, err)
	}
	transports := map[string]transport.Transport{}
	for _, client := range Clients(b) {
		switch client {
		case taskconfig.ClientKubernetes:
			var cfg *rest.Config
			switch kc := b.Adapter.Clients.Kubernetes; {
			case kc != nil && kc.KubeConfigPath != "":
				if cfg, err = kubetransport.RESTConfig(kc.KubeConfigPath, kc.QPS, kc.Burst); err != nil {
					return nil, fmt.Errorf("adapter %s (%s): clients.kubernetes.kube_config_path: %w", name, b.AdapterFile, err)
				}
			case deps.Kube == nil:
				return nil, fmt.Errorf("adapter %s (%s) applies Kubernetes resources but no cluster is configured: %s", name, b.TaskFile, deps.KubeMissing)
			default:
				if cfg, err = deps.Kube(); err != nil {
					return nil, fmt.Errorf("adapter %s (%s) applies Kubernetes resources: %w", name, b.TaskFile, err)
				}
			}
			var opts []kubetransport.Option
			if deps.Changes != nil {
				wctx := deps.WatchContext
				if wctx == nil {
					wctx = context.Background()
				}
				opts = append(opts, kubetransport.WithWatch(kubetransport.Watch{Adapter: name, Notify: deps.Changes, Context: wctx, Logger: deps.Logger}))
			}
			t, err := kubetransport.New(cfg, "hyperfleet-"+name, opts...)
			if err != nil {
				return nil, fmt.Errorf("adapter %s: %w", name, err)
			}
			transports[client] = t
		case taskconfig.ClientMaestro:
			if deps.MaestroClients == nil {
				deps.MaestroClients = maestrotransport.NewClients()
			}
			t, err := maestroTransport(b, deps.MaestroClients, deps.Maestro, deps.Changes, deps.Logger)
			if err != nil {
				return nil, fmt.Errorf("adapter %s: %w", name, err)
			}
			transports[client] = t
		}
	}
	eng, err := executor.New(b, executor.Options{
		API: api, Transports: transports, Metrics: deps.Metrics,
		Logger: deps.Logger, // the engine adds the adapter name to every line
	})
	if err != nil {
		return nil, err
	}
	if eng.HasResources() {
		deps.Metrics.Watched(name, eng.Unwatched)
		if why := eng.Unwatched(); why != "" {
			deps.Logger.Warn().Str("adapter", name).Str("unwatched", why).
				Msg("this worker does not watch what the adapter applies: its resources keep the short safety-net window (--stability-window), and drift is repaired only at their rounds")
		}
	}
	return eng, nil
}

// LoadAdapters loads every adapter; the first that fails stops the load.
func LoadAdapters(files []AdapterFiles, deps AdapterDeps) ([]*executor.Engine, error) {
	if deps.MaestroClients == nil {
		deps.MaestroClients = maestrotransport.NewClients()
	}
	engines := make([]*executor.Engine, 0, len(files))
	for _, f := range files {
		eng, err := LoadAdapter(f, deps)
		if err != nil {
			return nil, err
		}
		engines = append(engines, eng)
	}
	return engines, nil
}

// Clients lists the transports an adapter's resources use.
func Clients(b *taskconfig.Bundle) []string {
	seen := map[string]bool{}
	var out []string
	for i := range b.Task.Resources {
		c := b.Task.Resources[i].Client()
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func apiClient(b *taskconfig.Bundle, deps AdapterDeps) (*apiclient.Client, error) {
	c := b.Adapter.Clients.HyperFleetAPI
	cfg := apiclient.Config{
		AdapterName: b.Adapter.Adapter.Name, BaseURL: c.BaseURL, Version: c.Version,
		Timeout: c.Timeout.Duration, RetryAttempts: c.RetryAttempts, RetryBackoff: c.RetryBackoff,
		Metrics: deps.Metrics,
	}
	if deps.APIBaseURL != "" {
		cfg.BaseURL = deps.APIBaseURL
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("clients.hyperfleet_api.base_url is not set: set it, or pass --api-base-url")
	}
	if a := c.Auth; a != nil {
		cfg.TokenPath, cfg.TokenCacheTTL = a.TokenPath, a.TokenCacheTTL.Duration
	}
	if deps.APITokenFile != "" {
		cfg.TokenPath = deps.APITokenFile
	}
	cfg.Headers = deps.APIHeaders
	if t := c.TLS; t != nil {
		tc, err := tlsfiles.ClientConfig(tlsfiles.Files{CA: t.CAFile, Cert: t.CertFile, Key: t.KeyFile, InsecureSkipVerify: t.InsecureSkipVerify})
		if err != nil {
			return nil, fmt.Errorf("clients.hyperfleet_api.tls: %w", err)
		}
		cfg.HTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}
	}
	return apiclient.New(cfg)
}
