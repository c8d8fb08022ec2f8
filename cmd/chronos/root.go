package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// newRoot builds the cobra root: the registered server-side commands
// (their own flag parsing kept, so their flags and help are unchanged),
// the API commands (jobs, runs, apply) and cobra's completion command.
func newRoot(ctx context.Context, env *environ) *cobra.Command {
	root := &cobra.Command{
		Use:   "chronos",
		Short: "a distributed cron scheduler on Postgres",
		Long: "chronos: a distributed cron scheduler on Postgres.\n\n" +
			"The API commands (jobs, runs, apply) talk to an instance at CHRONOS_URL\n" +
			"(--url) with the key CHRONOS_API_KEY (--key).",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetContext(ctx)
	var stdin io.Reader = strings.NewReader("")
	if env.stdin != nil {
		stdin = env.stdin
	}
	root.SetIn(stdin)
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%s: %v (see `%s --help`)", c.Name(), err, c.CommandPath())
	})
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		sub := &cobra.Command{
			Use:                n,
			Short:              c.summary,
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return c.run(cmd.Context(), args, env)
			},
		}
		// `chronos help serve` shows the command's own help.
		sub.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
			_ = c.run(cmd.Context(), []string{"--help"}, env)
		})
		root.AddCommand(sub)
	}
	root.AddCommand(
		apiGroup(env, "jobs", "list, inspect and change jobs over the API",
			jobsList, jobsGet, jobsCreate, jobsUpdate, jobsPause, jobsResume,
			jobsTrigger, jobsDelete, jobsHistory, jobsSchedule, jobsBackfill),
		apiGroup(env, "runs", "list and inspect runs, and redrive dead ones (the dead-letter queue)",
			runsList, runsGet, runsRedrive),
		newApplyCmd(env), newHostsCmd(env),
		// Named concurrency and rate limits that jobs share through their
		// limit_key.
		apiGroup(env, "limits", "list, inspect and change the limits jobs share (limit_key)",
			limitsList, limitsGet, limitsPut, limitsDelete),
		apiGroup(env, "calendars", "list, inspect and change holiday calendars over the API",
			calendarsList, calendarsGet, calendarsApply, calendarsDelete))
	return root
}

// noArgs refuses arguments, as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usagef("%s: unexpected argument %q (see `%s --help`)", cmd.Name(), args[0], cmd.CommandPath())
}

// exactArgs wants n arguments, as a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: want %s (see `%s --help`)", cmd.Name(), what, cmd.CommandPath())
		}
		return nil
	}
}

// atLeastArgs wants n or more arguments, as a usage error.
func atLeastArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s: want %s (see `%s --help`)", cmd.Name(), what, cmd.CommandPath())
		}
		return nil
	}
}

// groupCmd is a command that only holds subcommands (jobs, runs).
func groupCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("%s: a subcommand is required\n\n%s", use, cmd.UsageString())}
		},
	}
}
