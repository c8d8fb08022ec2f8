package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos/client"
)

// The builders of the commands that call the API (jobs, runs, limits,
// calendars, hosts): each command says what it does with the client and
// the job; making the client from the flags, the arguments and their
// completion live here.

// apiGroup is the group command use (jobs, runs, limits, calendars)
// whose subcommands call the API: its API flags, persistent so that every
// subcommand has them, and the subcommands made with them.
func apiGroup(env *environ, use, short string, subs ...func(a *apiFlags) *cobra.Command) *cobra.Command {
	cmd := groupCmd(use, short)
	a := addAPIFlags(cmd, env)
	for _, sub := range subs {
		cmd.AddCommand(sub(a))
	}
	return cmd
}

// apiRunFunc is what a command that calls the API does, given the client
// its flags describe.
type apiRunFunc func(cmd *cobra.Command, c *client.Client, args []string) error

// runE is the RunE of a command that calls the API: the client (-o
// checked first), then run.
func (a *apiFlags) runE(run apiRunFunc) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		return run(cmd, c, args)
	}
}

// oneJob completes cmd as a command on one job, named by id or name in
// its only argument (completed from the job names), that does run.
func (a *apiFlags) oneJob(cmd *cobra.Command, run apiRunFunc) *cobra.Command {
	cmd.Use += " ID|NAME"
	cmd.Args = exactArgs(1, "one job id or name")
	cmd.ValidArgsFunction = completeJobs(a)
	cmd.RunE = a.runE(run)
	return cmd
}

// deleteCmd completes cmd as the delete command of things named by a
// key (limits, calendars): del deletes each argument in turn, and stderr
// says so ("deleted limit api"); the first failure stops it, naming its
// argument.
func (a *apiFlags) deleteCmd(cmd *cobra.Command, noun string, del func(c *client.Client, ctx context.Context, key string) error) *cobra.Command {
	cmd.RunE = a.runE(func(cmd *cobra.Command, c *client.Client, args []string) error {
		for _, key := range args {
			if err := del(c, cmd.Context(), key); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "deleted %s %s\n", noun, key)
		}
		return nil
	})
	return cmd
}

// listCmd completes cmd as the list command of things named by a key
// (limits, calendars): list fetches them all, printed as doc makes them
// (-o json, yaml) or with table.
func listCmd[T any](a *apiFlags, cmd *cobra.Command, list func(c *client.Client, ctx context.Context) ([]T, error), doc func(vs []T) any, table func(t *tabwriter.Writer, vs []T)) *cobra.Command {
	cmd.Args = noArgs
	cmd.RunE = a.runE(func(cmd *cobra.Command, c *client.Client, _ []string) error {
		vs, err := list(c, cmd.Context())
		return a.out.printResult(doc(vs), err, func(t *tabwriter.Writer) string { table(t, vs); return "" })
	})
	return cmd
}

// getCmd completes cmd as the get command of things named by a key
// (limits, calendars): get fetches the argument's, printed with table.
func getCmd[T any](a *apiFlags, cmd *cobra.Command, get func(c *client.Client, ctx context.Context, key string) (T, error), table func(t *tabwriter.Writer, v T) (footer string)) *cobra.Command {
	cmd.RunE = a.runE(func(cmd *cobra.Command, c *client.Client, args []string) error {
		v, err := get(c, cmd.Context(), args[0])
		return a.out.printResult(v, err, func(t *tabwriter.Writer) string { return table(t, v) })
	})
	return cmd
}

// jobCmd is oneJob whose run gets the job's id.
func (a *apiFlags) jobCmd(cmd *cobra.Command, run func(cmd *cobra.Command, c *client.Client, id int64) error) *cobra.Command {
	return a.oneJob(cmd, func(cmd *cobra.Command, c *client.Client, args []string) error {
		id, err := resolveID(cmd.Context(), c, args[0])
		if err != nil {
			return err
		}
		return run(cmd, c, id)
	})
}
