package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

// runFilterFlags are the filters of GET /v1/runs and POST /v1/runs/redrive.
type runFilterFlags struct {
	job, status, trigger, since, until string
}

func (r *runFilterFlags) add(cmd *cobra.Command, statusHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&r.job, "job", "", "only runs of this job (id or name)")
	fl.StringVar(&r.status, "status", "", statusHelp)
	fl.StringVar(&r.trigger, "trigger", "", "only runs with this trigger: schedule, manual, redrive or backfill")
	fl.StringVar(&r.since, "since", "", "only runs scheduled at or after this: RFC 3339, or a duration ago (24h)")
	fl.StringVar(&r.until, "until", "", "only runs scheduled before this: RFC 3339, or a duration ago")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"pending", "leased", "running", "succeeded", "dead"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("trigger", cobra.FixedCompletions([]string{"schedule", "manual", "redrive", "backfill"}, cobra.ShellCompDirectiveNoFileComp))
}

// filter builds the client's filter, resolving a job name.
func (r *runFilterFlags) filter(cmd *cobra.Command, c *client.Client) (client.RunFilter, error) {
	f := client.RunFilter{Status: chronos.RunStatus(r.status), Trigger: chronos.Trigger(r.trigger)}
	var err error
	if r.job != "" {
		if f.JobID, err = resolveID(cmd.Context(), c, r.job); err != nil {
			return f, err
		}
	}
	if f.Since, err = parseWhen("since", r.since); err != nil {
		return f, err
	}
	f.Until, err = parseWhen("until", r.until)
	return f, err
}

// parseWhen reads an RFC 3339 time or a duration before now.
func parseWhen(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, usagef("--%s: want an RFC 3339 time or a duration ago (24h), not %q", flag, v)
}

func runsList(a *apiFlags) *cobra.Command {
	var rf runFilterFlags
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "list runs across jobs, newest first (--status dead: the dead-letter queue)",
		Example: "  chronos runs list --status dead --since 24h\n  chronos runs list --job nightly-report",
		Args:    noArgs,
		RunE: a.runE(func(cmd *cobra.Command, c *client.Client, _ []string) error {
			f, err := rf.filter(cmd, c)
			if err != nil {
				return err
			}
			f.Limit, f.Cursor = limit, cursor
			var p *client.RunPage
			if f.JobID != 0 && f.Trigger == "" && f.Since.IsZero() && f.Until.IsZero() {
				p, err = c.ListJobRuns(cmd.Context(), f.JobID, f) // what every server has
			} else {
				p, err = c.ListRuns(cmd.Context(), f)
			}
			return a.out.printResult(p, err, func(t *tabwriter.Writer) string {
				runTable(t, p.Runs)
				return nextPage(p.NextCursor, "")
			})
		}),
	}
	rf.add(cmd, "only runs in this status: pending, leased, running, succeeded or dead")
	cmd.Flags().IntVar(&limit, "limit", 0, "page size (server default 50, max 500)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	return cmd
}

// runTable prints runs as a table.
func runTable(t *tabwriter.Writer, runs []*chronos.Run) {
	row(t, "ID", "JOB", "SCHEDULED", "TRIGGER", "STATUS", "ATTEMPTS", "LAST STATUS", "LAST ERROR")
	for _, r := range runs {
		row(t, strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.JobID, 10), when(&r.ScheduledAt), string(r.Trigger), string(r.Status),
			strconv.Itoa(r.AttemptCount), intp(r.LastStatusCode), truncate(strp(r.LastError), 60))
	}
}

func runsGet(a *apiFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "show a run and its attempts",
		Args:  exactArgs(1, "one run id"),
		RunE: a.runE(func(cmd *cobra.Command, c *client.Client, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usagef("get: run id %q is not a number", args[0])
			}
			r, err := c.GetRun(cmd.Context(), id)
			return a.out.printResult(r, err, func(t *tabwriter.Writer) string {
				fields(t, r, "attempts")
				row(t, "", "")
				row(t, "ATTEMPT", "STARTED", "DURATION", "STATUS", "ERROR")
				for _, at := range r.Attempts {
					dur := "-"
					if at.DurationMS != nil {
						dur = (time.Duration(*at.DurationMS) * time.Millisecond).String()
					}
					row(t, strconv.Itoa(at.Attempt), when(&at.StartedAt), dur, intp(at.StatusCode), truncate(strp(at.Error), 60))
				}
				return ""
			})
		}),
	}
}

func runsRedrive(a *apiFlags) *cobra.Command {
	var rf runFilterFlags
	var all bool
	var limit int
	cmd := &cobra.Command{
		Use:   "redrive ID... | --all | --job/--trigger/--since/--until",
		Short: "send dead runs round again: by id, or every dead run the filters pick (at most 1,000 per call)",
		Example: "  chronos runs redrive 1234\n  chronos runs redrive --job nightly-report --since 24h\n" +
			"  chronos runs redrive --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			filtered := rf.job != "" || rf.trigger != "" || rf.since != "" || rf.until != ""
			if len(args) > 0 && (filtered || all) {
				return usagef("redrive: give run ids or filters, not both")
			}
			if len(args) == 0 && !filtered && !all {
				return usagef("redrive: give run ids, filters, or --all for every dead run")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var runs []*chronos.Run
			more := false
			if len(args) > 0 {
				for _, arg := range args {
					id, err := strconv.ParseInt(arg, 10, 64)
					if err != nil {
						return usagef("redrive: run id %q is not a number", arg)
					}
					r, err := c.RedriveRun(cmd.Context(), id)
					if err != nil {
						return fmt.Errorf("run %d: %w", id, err)
					}
					runs = append(runs, r)
				}
			} else {
				f, err := rf.filter(cmd, c)
				if err != nil {
					return err
				}
				f.Status, f.Limit = chronos.StatusDead, limit
				res, err := c.RedriveRuns(cmd.Context(), f)
				if err != nil {
					return err
				}
				runs, more = res.Runs, res.More
			}
			return a.out.print(runs, func(t *tabwriter.Writer) string {
				runTable(t, runs)
				if more {
					return fmt.Sprintf("%d run(s) redriven; more dead runs match: run it again", len(runs))
				}
				return fmt.Sprintf("%d run(s) redriven", len(runs))
			})
		},
	}
	rf.add(cmd, "dead (the only status a redrive takes)")
	_ = cmd.Flags().MarkHidden("status")
	cmd.Flags().BoolVar(&all, "all", false, "every dead run (up to --limit)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (server default and maximum 1,000)")
	return cmd
}
