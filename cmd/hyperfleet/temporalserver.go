package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hyperfleet/hyperfleet/internal/embeddedtemporal"
	"github.com/hyperfleet/hyperfleet/workflows/reconcile"
)

// newTemporalCommand runs the embedded Temporal server alone, for local
// setups that run `serve` and `worker` as separate processes.
func newTemporalCommand() *cobra.Command {
	var (
		stateDir string
		port     int
		uiPort   int
		memory   bool
	)
	cmd := &cobra.Command{
		Use:   "temporal",
		Short: "Run the embedded Temporal server (with its Web UI) on its own",
		Long: `Run the same Temporal server 'hyperfleet dev' embeds, persisted in
<state-dir>/temporal.db, with the namespace "default" and HyperFleet's search
attributes registered: a local Temporal for 'hyperfleet serve
--temporal-address' and 'hyperfleet worker'. Not for production: one shard,
SQLite.`,
		Args:    cobra.NoArgs,
		PreRunE: bindEnvPreRun,
		RunE: withLogger(func(ctx context.Context, log zerolog.Logger) error {
			cfg := embeddedtemporal.Config{Port: port, SearchAttributes: reconcile.SearchAttributes()}
			if !memory {
				if err := os.MkdirAll(stateDir, 0o755); err != nil {
					return fmt.Errorf("--state-dir %s: %w", stateDir, err)
				}
				cfg.DatabaseFile = filepath.Join(stateDir, "temporal.db")
				cfg.LogFile = filepath.Join(stateDir, "temporal.log")
			}
			srv, err := embeddedtemporal.Start(cfg)
			if err != nil {
				return err
			}
			defer srv.Stop()
			ev := log.Info().Str("address", srv.HostPort()).Str("namespace", srv.Namespace()).Str("database", cfg.DatabaseFile)
			if uiPort != 0 {
				ui, err := srv.StartUI(uiPort)
				if err != nil {
					return err
				}
				defer ui.Stop()
				ev = ev.Str("ui", ui.URL)
			}
			ev.Msg("Temporal server running")
			<-ctx.Done()
			log.Info().Msg("Temporal server stopping")
			return nil
		}),
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", ".hyperfleet", "directory of temporal.db and temporal.log")
	cmd.Flags().IntVar(&port, "port", 7233, "frontend port on 127.0.0.1")
	cmd.Flags().IntVar(&uiPort, "ui-port", 8233, "Web UI port on 127.0.0.1 (0: no UI)")
	cmd.Flags().BoolVar(&memory, "memory", false, "keep everything in memory (lost on exit)")
	return cmd
}
