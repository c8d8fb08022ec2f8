package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

func jobsList(a *apiFlags) *cobra.Command {
	var f client.JobFilter
	var enabled, selector string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list jobs (oldest first)",
		Args:  noArgs,
		RunE: a.runE(func(cmd *cobra.Command, c *client.Client, _ []string) error {
			var err error
			switch enabled {
			case "":
			case "true", "false":
				b := enabled == "true"
				f.Enabled = &b
			default:
				return usagef("--enabled: want true or false")
			}
			if f.Labels, err = client.ParseSelector(selector); err != nil {
				return usageError{err}
			}
			page := &client.JobPage{}
			if all {
				page.Jobs, err = c.AllJobs(cmd.Context(), f)
			} else {
				page, err = c.ListJobs(cmd.Context(), f)
			}
			return a.out.printResult(page, err, func(t *tabwriter.Writer) string {
				jobTable(t, page.Jobs)
				return nextPage(page.NextCursor, ", or --all")
			})
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&enabled, "enabled", "", "only enabled (true) or paused (false) jobs")
	fl.StringVar(&f.NamePrefix, "name-prefix", "", "only jobs whose name begins with this")
	fl.StringVarP(&f.Query, "query", "q", "", "only jobs whose name or description contains this")
	fl.StringVarP(&selector, "selector", "l", "", "only jobs with these labels (k=v[,k=v...])")
	fl.IntVar(&f.Limit, "limit", 0, "page size (server default 50, max 500)")
	fl.StringVar(&f.Cursor, "cursor", "", "next_cursor of the previous page")
	fl.BoolVar(&all, "all", false, "follow the cursor through every page")
	return cmd
}

// jobTable prints jobs as a table.
func jobTable(t *tabwriter.Writer, jobs []*chronos.Job) {
	row(t, "ID", "NAME", "SCHEDULE", "TIMEZONE", "ENABLED", "NEXT RUN", "LABELS", "TARGET")
	for _, j := range jobs {
		sched := "-"
		if j.CronExpr != nil {
			sched = *j.CronExpr
		} else if j.RunAt != nil {
			sched = "at " + when(j.RunAt)
		}
		row(t, strconv.FormatInt(j.ID, 10), j.Name, sched, j.Timezone, strconv.FormatBool(j.Enabled), when(j.NextRunAt),
			labelString(client.LabelsOf(j)), truncate(j.Method+" "+j.TargetURL, 60))
	}
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	return client.Selector(l).String()
}

func jobsGet(a *apiFlags) *cobra.Command {
	return a.oneJob(&cobra.Command{Use: "get", Short: "show one job"}, func(cmd *cobra.Command, c *client.Client, args []string) error {
		j, err := resolveJob(cmd.Context(), c, args[0])
		return a.out.printResult(j, err, func(t *tabwriter.Writer) string { fields(t, j); return "" })
	})
}

// resolveJob finds a job by id or, when arg is not a number, by name.
func resolveJob(ctx context.Context, c *client.Client, arg string) (*chronos.Job, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		return c.GetJob(ctx, id)
	}
	jobs, err := c.AllJobs(ctx, client.JobFilter{NamePrefix: arg})
	if client.Code(err) == chronos.EINVALID {
		jobs, err = c.AllJobs(ctx, client.JobFilter{}) // a server without ?name_prefix=
	}
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.Name == arg {
			return j, nil
		}
	}
	return nil, noJobNamed(arg)
}

// noJobNamed is the error for a name no job has: the answer of the
// lookup by name, a 404 as the API's own answer for an id would be, so
// it prints alike ("chronos: not_found: no job named "x" (HTTP 404)").
func noJobNamed(name string) error {
	return &client.Error{Status: http.StatusNotFound,
		API: &chronos.Error{Code: chronos.ENOTFOUND, Message: fmt.Sprintf("no job named %q", name)}}
}

// resolveID is resolveJob's id, without a lookup for a number.
func resolveID(ctx context.Context, c *client.Client, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		return id, nil
	}
	j, err := resolveJob(ctx, c, arg)
	if err != nil {
		return 0, err
	}
	return j.ID, nil
}

// completeJobs completes job names (shell completion).
func completeJobs(a *apiFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		c, err := a.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		p, err := c.ListJobs(ctx, client.JobFilter{NamePrefix: prefix, Limit: 100})
		if err != nil {
			p, err = c.ListJobs(ctx, client.JobFilter{Limit: 500})
		}
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, j := range p.Jobs {
			if strings.HasPrefix(j.Name, prefix) {
				out = append(out, j.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// jobFlags are the fields of a job as flags, for create and update.
type jobFlags struct {
	file, onDead, limitKey         string
	name, cron, runAt, target      string
	method, timezone, payload      string
	description, overlap, backoff  string
	headers, labels, secretHeaders []string
	maxRetries, timeout            int
	enabled, generateSecret        bool
}

func (f *jobFlags) add(cmd *cobra.Command, create bool) {
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "the job as a JSON or YAML object (- for stdin); flags override its fields")
	fl.StringVar(&f.name, "name", "", "job name (unique)")
	fl.StringVar(&f.cron, "cron", "", "cron expression (cron_expr)")
	fl.StringVar(&f.runAt, "run-at", "", "one-shot time, RFC 3339 (run_at)")
	fl.StringVar(&f.target, "target", "", "target URL (target_url)")
	fl.StringVar(&f.onDead, "on-dead-url", "", `URL alerted when a run goes dead (on_dead_url; "" clears it)`)
	fl.StringVar(&f.limitKey, "limit-key", "", `the limit its runs share (limit_key, see chronos limits; "" clears it)`)
	fl.StringVar(&f.method, "method", "", "HTTP method (default POST)")
	fl.StringVar(&f.timezone, "timezone", "", "IANA time zone (default UTC)")
	fl.StringVar(&f.payload, "payload", "", "request body, JSON")
	fl.StringVar(&f.description, "description", "", "free text")
	fl.StringVar(&f.overlap, "overlap", "", "allow, skip or queue_one")
	fl.StringVar(&f.backoff, "backoff", "", "exponential or linear")
	fl.StringArrayVar(&f.headers, "header", nil, "request header Name=value (repeatable; replaces all headers)")
	fl.StringArrayVar(&f.secretHeaders, "secret-header", nil, "a header whose value is write-only (repeatable)")
	fl.StringArrayVar(&f.labels, "label", nil, "label key=value (repeatable; replaces all labels)")
	fl.IntVar(&f.maxRetries, "max-retries", 0, "retries after the first attempt")
	fl.IntVar(&f.timeout, "timeout", 0, "seconds per attempt (timeout_seconds)")
	fl.BoolVar(&f.enabled, "enabled", true, "whether the job is scheduled")
	if create {
		fl.BoolVar(&f.generateSecret, "generate-signing-secret", false, "give the job its own signing secret (printed once)")
	}
}

// body is the JSON object the file and the changed flags describe.
func (f *jobFlags) body(cmd *cobra.Command) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if f.file != "" {
		specs, err := client.ReadObjects(f.file, cmd.InOrStdin())
		if err != nil {
			return nil, err
		}
		if len(specs) != 1 {
			return nil, usagef("--file: want one job, found %d (use `chronos apply` for many)", len(specs))
		}
		if err := json.Unmarshal(specs[0], &out); err != nil {
			return nil, usagef("--file: a job must be a mapping of fields")
		}
	}
	set := func(flag, field string, v any) {
		if cmd.Flags().Changed(flag) {
			b, _ := json.Marshal(v)
			out[field] = b
		}
	}
	set("name", "name", f.name)
	set("cron", "cron_expr", f.cron)
	set("run-at", "run_at", f.runAt)
	set("target", "target_url", f.target)
	set("on-dead-url", "on_dead_url", f.onDead)
	set("limit-key", "limit_key", f.limitKey)
	set("method", "method", f.method)
	set("timezone", "timezone", f.timezone)
	set("description", "description", f.description)
	set("overlap", "overlap", f.overlap)
	set("backoff", "backoff", f.backoff)
	set("max-retries", "max_retries", f.maxRetries)
	set("timeout", "timeout_seconds", f.timeout)
	set("enabled", "enabled", f.enabled)
	set("generate-signing-secret", "generate_signing_secret", f.generateSecret)
	set("secret-header", "secret_headers", f.secretHeaders)
	if cmd.Flags().Changed("payload") {
		if !json.Valid([]byte(f.payload)) {
			return nil, usagef("--payload: not valid JSON")
		}
		out["payload"] = json.RawMessage(f.payload)
	}
	for flag, field := range map[string]string{"header": "headers", "label": "labels"} {
		vals, _ := cmd.Flags().GetStringArray(flag)
		if !cmd.Flags().Changed(flag) {
			continue
		}
		m := map[string]string{}
		for _, kv := range vals {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usagef("--%s %q: want key=value", flag, kv)
			}
			m[k] = v
		}
		b, _ := json.Marshal(m)
		out[field] = b
	}
	return out, nil
}

func jobsCreate(a *apiFlags) *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "create a job from flags or a file (-f)",
		Example: `  chronos jobs create --name nightly-report --cron "0 3 * * *" --timezone Europe/Berlin \
    --target https://example.com/hooks/report --payload '{"report":"daily"}'
  chronos jobs create -f job.yaml`,
		Args: noArgs,
		RunE: a.runE(func(cmd *cobra.Command, c *client.Client, _ []string) error {
			body, err := f.body(cmd)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(body)
			j, err := c.CreateJobJSON(cmd.Context(), b)
			return a.out.printResult(j, err, func(t *tabwriter.Writer) string {
				jobTable(t, []*chronos.Job{&j.Job})
				if j.SigningSecret != "" {
					return fmt.Sprintf("signing secret (shown once): %s", j.SigningSecret)
				}
				return ""
			})
		}),
	}
	f.add(cmd, true)
	return cmd
}

func jobsUpdate(a *apiFlags) *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:               "update ID|NAME",
		Short:             "change the given fields of a job (a partial update)",
		Example:           `  chronos jobs update nightly-report --cron "0 4 * * *" --max-retries 5`,
		Args:              exactArgs(1, "one job id or name"),
		ValidArgsFunction: completeJobs(a),
		RunE: a.runE(func(cmd *cobra.Command, c *client.Client, args []string) error {
			body, err := f.body(cmd)
			if err != nil {
				return err
			}
			if len(body) == 0 {
				return usagef("update: nothing to change (give flags or -f)")
			}
			id, err := resolveID(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			b, _ := json.Marshal(body)
			j, err := c.UpdateJobJSON(cmd.Context(), id, b)
			return a.out.printResult(j, err, func(t *tabwriter.Writer) string { jobTable(t, []*chronos.Job{j}); return "" })
		}),
	}
	f.add(cmd, false)
	return cmd
}

// jobsPause is `jobs pause`: jobsEnable with enabled false.
func jobsPause(a *apiFlags) *cobra.Command { return jobsEnable(a, "pause", false) }

// jobsResume is `jobs resume`: jobsEnable with enabled true.
func jobsResume(a *apiFlags) *cobra.Command { return jobsEnable(a, "resume", true) }

// jobsEnable is pause (enabled false) or resume (true), by ids and names
// or by a label selector.
func jobsEnable(a *apiFlags, verb string, enabled bool) *cobra.Command {
	var selector string
	cmd := &cobra.Command{
		Use:               verb + " ID|NAME... | -l k=v[,k=v...]",
		Short:             verb + " jobs, by id or name, or every job a label selector picks",
		Example:           fmt.Sprintf("  chronos jobs %s nightly-report\n  chronos jobs %s -l team=payments", verb, verb),
		ValidArgsFunction: completeJobs(a),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == (selector == "") {
				return usagef("%s: give job ids or names, or -l, not both", verb)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var jobs []*chronos.Job
			if selector != "" {
				sel, err := client.ParseSelector(selector)
				if err != nil {
					return usageError{err}
				}
				ids, err := bulkEnable(cmd.Context(), c, sel, enabled)
				if err != nil {
					return err
				}
				if ids != nil {
					return a.out.print(map[string]any{"job_ids": ids, "count": len(ids)}, func(*tabwriter.Writer) string {
						return fmt.Sprintf("%d job(s) %sd: %v", len(ids), verb, ids)
					})
				}
				if jobs, err = c.SetEnabledBySelector(cmd.Context(), sel, enabled); err != nil {
					return err
				}
			} else {
				for _, arg := range args {
					id, err := resolveID(cmd.Context(), c, arg)
					if err != nil {
						return err
					}
					j, err := c.UpdateJob(cmd.Context(), id, &chronos.JobUpdate{Enabled: chronos.Some(enabled)})
					if err != nil {
						return fmt.Errorf("%s: %w", arg, err)
					}
					jobs = append(jobs, j)
				}
			}
			return a.out.print(jobs, func(t *tabwriter.Writer) string {
				jobTable(t, jobs)
				return fmt.Sprintf("%d job(s) %sd", len(jobs), verb)
			})
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "every job with these labels (k=v[,k=v...])")
	return cmd
}

// bulkEnable pauses or resumes every job sel picks through POST
// /v1/jobs/pause or /resume, a call per 1,000, and returns their ids; nil
// and no error when the server has no such endpoint (the caller then
// patches job by job).
func bulkEnable(ctx context.Context, c *client.Client, sel client.Selector, enabled bool) ([]int64, error) {
	ids := []int64{}
	for {
		var res *client.BulkResult
		var err error
		if enabled {
			res, err = c.ResumeJobs(ctx, sel)
		} else {
			res, err = c.PauseJobs(ctx, sel)
		}
		switch code := client.Code(err); {
		case code == chronos.ENOTFOUND || code == "method_not_allowed":
			return nil, nil
		case err != nil:
			return nil, err
		}
		ids = append(ids, res.JobIDs...)
		if !res.More || res.Count == 0 {
			return ids, nil
		}
	}
}

func jobsTrigger(a *apiFlags) *cobra.Command {
	return a.jobCmd(&cobra.Command{Use: "trigger", Short: "run a job now (a manual run)"}, func(cmd *cobra.Command, c *client.Client, id int64) error {
		r, err := c.TriggerJob(cmd.Context(), id)
		return a.out.printResult(r, err, func(t *tabwriter.Writer) string { runTable(t, []*chronos.Run{r}); return "" })
	})
}

func jobsDelete(a *apiFlags) *cobra.Command {
	return &cobra.Command{
		Use:               "delete ID|NAME...",
		Short:             "delete jobs and their runs",
		Args:              atLeastArgs(1, "job ids or names"),
		ValidArgsFunction: completeJobs(a),
		RunE: a.runE(func(cmd *cobra.Command, c *client.Client, args []string) error {
			for _, arg := range args {
				id, err := resolveID(cmd.Context(), c, arg)
				if err != nil {
					return err
				}
				if err := c.DeleteJob(cmd.Context(), id); err != nil {
					return fmt.Errorf("%s: %w", arg, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "deleted job %d (%s)\n", id, arg)
			}
			return nil
		}),
	}
}

func jobsHistory(a *apiFlags) *cobra.Command {
	var limit int
	var cursor string
	cmd := a.oneJob(&cobra.Command{
		Use:   "history",
		Short: "show who changed a job, when, and what (the audit history)",
	}, func(cmd *cobra.Command, c *client.Client, args []string) error {
		// A deleted job keeps its history: an id needs no lookup, and
		// a name no job has now is looked up among the deleted ones.
		id, err := resolveID(cmd.Context(), c, args[0])
		if client.Code(err) == chronos.ENOTFOUND {
			id, err = deletedJobID(cmd.Context(), c, args[0], err)
		}
		if err != nil {
			return err
		}
		p, err := c.JobHistory(cmd.Context(), id, limit, cursor)
		return a.out.printResult(p, err, func(t *tabwriter.Writer) string {
			row(t, "AT", "ACTOR", "ACTION", "CHANGED")
			for _, e := range p.Entries {
				var names []string
				for k := range e.Changes {
					names = append(names, k)
				}
				row(t, e.At.UTC().Format(time.RFC3339), e.Actor, e.Action, truncate(strings.Join(sorted(names), ", "), 80))
			}
			return nextPage(p.NextCursor, "")
		})
	})
	cmd.Flags().IntVar(&limit, "limit", 0, "page size")
	cmd.Flags().StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	return cmd
}

// deletedJobID is the id of the job named name that was deleted last, or
// notFound when none was (or the server cannot tell).
func deletedJobID(ctx context.Context, c *client.Client, name string, notFound error) (int64, error) {
	gone, err := c.DeletedJobs(ctx, name)
	switch {
	case client.Code(err) == chronos.ENOTFOUND || client.Code(err) == chronos.EINVALID:
		return 0, notFound // a server without GET /v1/jobs/deleted
	case err != nil:
		return 0, err
	case len(gone) == 0:
		return 0, notFound
	}
	return gone[0].ID, nil
}

func jobsSchedule(a *apiFlags) *cobra.Command {
	var count int
	var after string
	cmd := a.oneJob(&cobra.Command{Use: "schedule", Short: "preview a job's next fire times"}, func(cmd *cobra.Command, c *client.Client, args []string) error {
		var at time.Time
		var err error
		if after != "" {
			if at, err = time.Parse(time.RFC3339, after); err != nil {
				return usagef("--after: want an RFC 3339 time: %v", err)
			}
		}
		id, err := resolveID(cmd.Context(), c, args[0])
		if err != nil {
			return err
		}
		s, err := c.JobSchedule(cmd.Context(), id, count, at)
		return a.out.printResult(s, err, func(t *tabwriter.Writer) string {
			row(t, "FIRE TIME (UTC)", "LOCAL")
			for i, ft := range s.FireTimes {
				local := "-"
				if i < len(s.LocalTimes) {
					local = s.LocalTimes[i]
				}
				row(t, ft.UTC().Format(time.RFC3339), local)
			}
			if s.Description != "" {
				return s.Description
			}
			return ""
		})
	})
	cmd.Flags().IntVar(&count, "count", 0, "how many fire times (server default 10, max 100)")
	cmd.Flags().StringVar(&after, "after", "", "from this RFC 3339 time (default now)")
	return cmd
}
