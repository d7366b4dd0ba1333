package store

import "context"

// MigrateUpTo applies the migrations up to version only: the database an
// older binary left, for the tests of upgrading in place. Not for parallel
// tests: it swaps the package's migration list while it runs.
func MigrateUpTo(ctx context.Context, s Store, version int) error {
	all := migrations
	defer func() { migrations = all }()
	for i, m := range all {
		if m.version == version {
			migrations = all[:i+1]
		}
	}
	return s.(*gormStore).Migrate(ctx)
}
