package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

// jobsBackfill is `chronos jobs backfill NAME --from --to [--dry-run]`.
func jobsBackfill(a *apiFlags) *cobra.Command {
	var from, to, key string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "backfill ID|NAME --from TIME [--to TIME] [--dry-run]",
		Short: "run a cron job's past occurrences in a range, oldest first",
		Long: `Backfill creates one run (trigger backfill, delivered with
X-Chronos-Backfill: true) for each occurrence of the job's schedule in
[--from, --to) that has no run yet: time zone, DST, exclusions and calendars
apply. The runs start oldest first, under the job's overlap policy. An
occurrence never gets a second run, so repeating a backfill is safe. At most
1,000 occurrences per call. --dry-run lists them and creates nothing.

--from and --to take an RFC 3339 time, a date (YYYY-MM-DD, midnight UTC)
or a duration ago (24h); --to defaults to now.`,
		Example:           "  chronos jobs backfill nightly-report --from 2026-11-01 --to 2026-12-01 --dry-run\n  chronos jobs backfill sync --from 48h",
		Args:              exactArgs(1, "one job id or name"),
		ValidArgsFunction: completeJobs(a),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usagef("backfill: --from is required")
			}
			f, err := parseInstant("from", from)
			if err != nil {
				return err
			}
			t := time.Now()
			if to != "" && to != "now" {
				if t, err = parseInstant("to", to); err != nil {
					return err
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			id, err := resolveID(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var opts []client.CallOption
			if key != "" {
				opts = append(opts, client.WithIdempotencyKey(key))
			}
			b, err := c.Backfill(cmd.Context(), id, chronos.BackfillRequest{From: f, To: t, DryRun: dryRun}, opts...)
			return a.out.printResult(b, err, func(tw *tabwriter.Writer) string { return backfillTable(tw, b) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "first instant (inclusive): RFC 3339, YYYY-MM-DD or a duration ago")
	fl.StringVar(&to, "to", "", "last instant (exclusive), default now")
	fl.BoolVar(&dryRun, "dry-run", false, "list the occurrences; create nothing")
	fl.StringVar(&key, "idempotency-key", "", "send this Idempotency-Key (a retry with it does nothing more)")
	return cmd
}

// parseInstant reads --from/--to: RFC 3339, a date, or a duration ago.
func parseInstant(flag, v string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	return parseWhen(flag, v)
}

// backfillTable shows a backfill: each occurrence and what became of it.
func backfillTable(t *tabwriter.Writer, b *chronos.Backfill) string {
	created := map[time.Time]int64{}
	for _, r := range b.Created {
		created[r.ScheduledAt.UTC()] = r.ID
	}
	existing := map[time.Time]bool{}
	for _, x := range b.Existing {
		existing[x.UTC()] = true
	}
	row(t, "OCCURRENCE", "RUN")
	for _, o := range b.Occurrences {
		what := "would run"
		switch {
		case existing[o.UTC()]:
			what = "has a run already"
		case created[o.UTC()] != 0:
			what = fmt.Sprintf("run %d", created[o.UTC()])
		case !b.DryRun:
			what = "-"
		}
		row(t, o.UTC().Format(time.RFC3339), what)
	}
	var notes []string
	for _, e := range b.Skipped {
		notes = append(notes, fmt.Sprintf("skipped %s (calendar %s)", e.At.UTC().Format(time.RFC3339), e.Calendar))
	}
	for _, e := range b.Shifted {
		to := "dropped"
		if e.To != nil {
			to = e.To.UTC().Format(time.RFC3339)
		}
		notes = append(notes, fmt.Sprintf("moved %s -> %s (calendar %s)", e.At.UTC().Format(time.RFC3339), to, e.Calendar))
	}
	verb := fmt.Sprintf("%d run(s) created", len(b.Created))
	if b.DryRun {
		verb = fmt.Sprintf("dry run: %d would run; nothing was created", len(b.Occurrences)-len(b.Existing))
	}
	notes = append(notes, fmt.Sprintf("%d occurrence(s) in [%s, %s), %d with a run already; %s",
		len(b.Occurrences), b.From.Format(time.RFC3339), b.To.Format(time.RFC3339), len(b.Existing), verb))
	return strings.Join(notes, "\n")
}
