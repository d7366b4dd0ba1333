package worker

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
	"github.com/hyperfleet/hyperfleet/adapter/transport"
	maestrotransport "github.com/hyperfleet/hyperfleet/adapter/transport/maestro"
)

// maestroTransport wires an adapter's Maestro resources: its
// clients.maestro block with the HYPERFLEET_MAESTRO_* variables over it,
// and the worker's --maestro-* flags over both. Adapters with the same
// settings share clients' one.
// Nothing connects here (the gRPC stream opens on first use), so a worker
// starts while Maestro is down and its activities report that as a status.
//
// With changes set, the client watches the status the agents report and
// passes changes to the adapter's ManifestWorks on, so readiness wakes the
// owning workflow instead of waiting for its next timer.
func maestroTransport(b *taskconfig.Bundle, clients *maestrotransport.Clients, flags maestrotransport.Overrides, changes func(transport.Change), log zerolog.Logger) (transport.Transport, error) {
	over, err := maestrotransport.OverridesFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	cfg := flags.Apply(over.Apply(maestrotransport.FromTaskConfig(b.Adapter.Clients.Maestro, b.Adapter.Adapter.Name)))
	c, err := clients.Get(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("%s applies resources through Maestro:\n%w", b.AdapterFile, err)
	}
	if changes != nil {
		return maestrotransport.NewWatchingTransport(c, b.Adapter.Adapter.Name, changes), nil
	}
	return maestrotransport.NewTransport(c), nil
}
