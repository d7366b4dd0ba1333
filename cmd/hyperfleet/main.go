// Command hyperfleet is the single binary of HyperFleet on Temporal: the API
// server, the workers, the all-in-one dev mode and the adapter tools.
//
// Every flag can also be set from the environment as HYPERFLEET_<FLAG>
// (upper case, '-' as '_'); a flag given on the command line wins.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hyperfleet/hyperfleet/internal/version"
)

func main() { os.Exit(run()) }

// run executes the command and returns the exit code, so that deferred
// clean-up runs before the process exits.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "hyperfleet:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "hyperfleet",
		Short:         "Cluster-lifecycle orchestration: REST API, adapters and Temporal reconciliation",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version + " (built " + version.BuildTime + ")",
	}
	addLogFlags(root)
	root.AddCommand(newServeCommand(), newWorkerCommand(), newDevCommand(), newTemporalCommand(), newMigrateCommand(), newAdapterCommand(),
		newVersionsCommand(), newRunHACommand())
	return root
}
