package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hyperfleet/hyperfleet/adapter/dryrun"
	"github.com/hyperfleet/hyperfleet/adapter/taskconfig"
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func newAdapterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adapter",
		Short: "Validate and dry-run adapter task configs",
	}
	cmd.AddCommand(newValidateCommand(), newDryRunCommand())
	return cmd
}

// configFlags locate an adapter's files.
type configFlags struct {
	config     string
	taskConfig string
	refDirs    []string
}

func (c *configFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.config, "config", "", "AdapterConfig file (adapter-config.yaml)")
	cmd.Flags().StringVar(&c.taskConfig, "task-config", "", "AdapterTaskConfig file (adapter-task-config.yaml) (required)")
	cmd.Flags().StringArrayVar(&c.refDirs, "ref-dir", nil, "map a directory that manifest.ref paths name to a local one, MOUNT=DIR (repeatable; /etc/adapter maps to the task config's directory by default)")
}

func (c *configFlags) load(out io.Writer) (*taskconfig.Bundle, taskconfig.Problems, error) {
	if c.taskConfig == "" {
		return nil, nil, errors.New("--task-config is required")
	}
	mounts := map[string]string{}
	for _, m := range c.refDirs {
		mount, dir, ok := strings.Cut(m, "=")
		if !ok || mount == "" || dir == "" {
			return nil, nil, fmt.Errorf("--ref-dir %q: write MOUNT=DIR, e.g. /etc/adapter=./my-adapter", m)
		}
		mounts[mount] = dir
	}
	b, problems := taskconfig.Load(c.config, c.taskConfig, taskconfig.Options{Mounts: mounts})
	for _, p := range problems {
		fmt.Fprintln(out, p.String())
	}
	return b, problems, nil
}

func newValidateCommand() *cobra.Command {
	var cf configFlags
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate --config adapter-config.yaml --task-config adapter-task-config.yaml",
		Short: "Check an adapter's configuration: structure, CEL, templates, refs",
		Long: `Load an adapter's two files and report every problem at once: unknown or
missing fields, invalid operators and names, CEL that does not compile,
template variables that are not defined, manifest refs that do not exist.
Each problem names the file, the line, the path of the field and the fix.
Exits 1 when there is an error (or a warning, with --strict).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			_, problems, err := cf.load(out)
			if err != nil {
				return err
			}
			errs, warns := len(problems.Errors()), len(problems.Warnings())
			if errs > 0 || strict && warns > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d error(s), %d warning(s)", errs, warns)}
			}
			fmt.Fprintf(out, "valid: %s (%d warning(s))\n", cf.taskConfig, warns)
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	return cmd
}

func newDryRunCommand() *cobra.Command {
	var cf configFlags
	var in dryrun.Inputs
	var verbose bool
	var output, at string
	cmd := &cobra.Command{
		Use:   "dry-run --config ... --task-config ... --dry-run-event event.json",
		Short: "Run an adapter against mock files: no cluster, no API, no network",
		Long: `Run the four phases of an adapter once, with the event, the API's answers
and the objects discovery returns all read from files, and print the trace.

  --dry-run-event          the event: {id, kind, href, generation} or a CloudEvent holding it in data
  --dry-run-api-responses  {"responses": [{"match": {"method", "urlPattern"}, "responses": [{"statusCode", "body"}]}]}
                           (urlPattern is a regular expression on the path; responses are used in order, the last repeats)
  --dry-run-discovery      {"<rendered object name>": <object as the cluster would return it>}

Exit status: 0 when the simulated run succeeded, was skipped or found the
resource gone; 2 when it failed; 1 when the inputs are invalid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if output != "text" && output != "json" {
				return fmt.Errorf("--dry-run-output %q: use text or json", output)
			}
			if at != "" {
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return fmt.Errorf("--dry-run-time %q: use RFC 3339, e.g. 2025-01-15T10:30:00Z", at)
				}
				in.Now = t
			}
			diag := out
			if output == "json" {
				diag = cmd.ErrOrStderr()
			}
			b, problems, err := cf.load(diag)
			if err != nil {
				return err
			}
			if err := problems.Err(); err != nil {
				return &exitError{code: 1, msg: "the configuration is invalid; fix the errors above"}
			}
			rep, err := dryrun.Run(cmd.Context(), b, in)
			if err != nil {
				return err
			}
			if output == "json" {
				if err := rep.WriteJSON(out); err != nil {
					return err
				}
			} else {
				rep.WriteText(out, verbose)
			}
			if rep.Result == "FAILED" {
				return &exitError{code: 2, msg: "the simulated run failed (see the trace)"}
			}
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&in.EventFile, "dry-run-event", "", "event JSON file (required)")
	cmd.Flags().StringVar(&in.APIResponsesFile, "dry-run-api-responses", "", "mock HyperFleet API responses JSON file")
	cmd.Flags().StringVar(&in.DiscoveryFile, "dry-run-discovery", "", "discovery overrides JSON file")
	cmd.Flags().BoolVar(&verbose, "dry-run-verbose", false, "show rendered manifests, request and response bodies and payloads")
	cmd.Flags().StringVar(&output, "dry-run-output", "text", "trace format: text or json")
	cmd.Flags().StringVar(&at, "dry-run-time", "", "fix the clock (RFC 3339) for reproducible traces")
	return cmd
}
