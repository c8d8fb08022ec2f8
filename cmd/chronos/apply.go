package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos/client"
)

// newApplyCmd is `chronos apply`: jobs as code (client.MakePlan, Apply).
func newApplyCmd(env *environ) *cobra.Command {
	var files []string
	var dryRun, prune, allowEmpty bool
	var selector string
	var parallel int
	var api *apiFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "make the server's jobs match a file (jobs as code), keyed by name",
		Long: `Apply creates and updates jobs, keyed by name, so the server matches the files.

A file is YAML or JSON: one or more documents, each a list of jobs, a
mapping {jobs: [...]}, or one job, in the fields of POST /v1/jobs. A
directory means its *.yaml, *.yml and *.json files; - means stdin.

An item with kind: Calendar is a calendar (name, description, and dates or
ical, as PUT /v1/calendars/{name}); one with kind: Limit is a limit (key,
max_concurrency, rate, per_seconds, as PUT /v1/limits/{key}). They are
created and replaced before the jobs that name them; with --prune, the
calendars (limits) the files do not list are deleted after the jobs, if
the files list at least one calendar (limit): a manifest of jobs alone
leaves them as they are.

Every job is checked before anything changes: one invalid job refuses the
whole apply, naming the file, the job and the field. A field the file
leaves out is set to its default, except enabled, which apply changes only
when the file sets it (a job paused by hand stays paused). Secret header
values are write-only: a change to one alone is not seen. A second apply of
the same files reports no changes and writes nothing. New jobs are created
in batches of up to 1,000 (POST /v1/jobs/batch), each all or nothing.

Backup and restore: the output of 'chronos jobs list --all -o yaml' is a
manifest (the fields only the server sets, such as id and next_run_at, are
ignored). Secret header values show there as [redacted]; apply refuses a
file holding that placeholder, so write the real values in before restoring.

--prune deletes the jobs with the labels of --selector that the files no
longer list; it needs --selector. A prune from an empty set (no job of the
files has the selector's labels: an empty stdin, a file of only comments,
jobs: []) would delete every selected job, so it is refused unless
--allow-empty is given.`,
		Example: "  chronos apply -f jobs.yaml --dry-run\n  chronos apply -f jobs/ --prune --selector team=payments\n  cat jobs.yaml | chronos apply -f -",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usagef("apply: -f is required")
			}
			sel, err := client.ParseSelector(selector)
			if err != nil {
				return usageError{err}
			}
			if prune && len(sel) == 0 {
				return usagef("apply: --prune needs --selector (it deletes only the jobs the selector picks)")
			}
			if allowEmpty && !prune {
				return usagef("apply: --allow-empty only makes sense with --prune")
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			start := time.Now()
			m, err := client.LoadManifestAll(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			p, err := c.MakePlan(cmd.Context(), m.Jobs, client.PlanOptions{Prune: prune, Selector: sel, AllowEmpty: allowEmpty})
			if err != nil {
				return err
			}
			if p.Objects, p.ObjectsUnchanged, err = c.PlanObjects(cmd.Context(), m.Objects, prune); err != nil {
				return err
			}
			if api.out.format != "table" {
				if !dryRun && !p.Empty() {
					if _, err := c.Apply(cmd.Context(), p, parallel); err != nil {
						return err
					}
				}
				return api.out.print(p, nil)
			}
			out := cmd.OutOrStdout()
			fmt.Fprint(out, p.String())
			if p.Empty() {
				fmt.Fprintf(out, "no changes (%s unchanged)\n", p.UnchangedSummary())
				return nil
			}
			if dryRun {
				fmt.Fprint(out, client.TallyLines(p.ObjectTallies(), true))
				fmt.Fprintf(out, "dry run: %d to change, %d unchanged; nothing was changed\n", len(p.Steps), p.Unchanged)
				return nil
			}
			res, err := c.Apply(cmd.Context(), p, parallel)
			fmt.Fprint(out, client.TallyLines(res.Objects, false))
			fmt.Fprintf(out, "%d created, %d updated, %d deleted, %d unchanged in %s\n",
				res.Created, res.Updated, res.Deleted, res.Unchanged, time.Since(start).Round(time.Millisecond))
			return err
		},
	}
	api = addAPIFlags(cmd, env)
	fl := cmd.Flags()
	fl.StringArrayVarP(&files, "file", "f", nil, "a file, a directory or - for stdin (repeatable)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the changes and change nothing")
	fl.BoolVar(&prune, "prune", false, "delete the jobs --selector picks that the files do not list")
	fl.StringVarP(&selector, "selector", "l", "", "labels k=v[,k=v...] of the jobs --prune may delete")
	fl.BoolVar(&allowEmpty, "allow-empty", false, "let --prune delete every selected job when the files list none of them")
	fl.IntVar(&parallel, "parallel", 8, "writes in flight at once")
	return cmd
}
