package main

import (
	"context"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hyperfleet/hyperfleet/apiserver/store"
)

func newMigrateCommand() *cobra.Command {
	var db dbFlags
	cmd := &cobra.Command{
		Use:     "migrate",
		Short:   "Apply pending database schema migrations and exit",
		Args:    cobra.NoArgs,
		PreRunE: bindEnvPreRun,
		RunE: withLogger(func(ctx context.Context, log zerolog.Logger) error {
			cfg, err := db.config()
			if err != nil {
				return err
			}
			cfg.Logger = log
			s, err := store.Open(ctx, cfg)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				return err
			}
			log.Info().Int("schema_version", store.SchemaVersion()).Str("db", cfg.Driver).Msg("database is up to date")
			return nil
		}),
	}
	db.add(cmd.Flags())
	return cmd
}
