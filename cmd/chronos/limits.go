package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

func limitsList(a *apiFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "list limits with their runs in flight, tokens left and runs waiting"}
	return listCmd(a, cmd, (*client.Client).ListLimits,
		func(ls []*chronos.Limit) any { return map[string]any{"limits": ls} }, limitTable)
}

// limitTable prints limits as a table.
func limitTable(t *tabwriter.Writer, ls []*chronos.Limit) {
	row(t, "KEY", "CONCURRENCY", "RATE", "IN FLIGHT", "TOKENS", "WAITING", "JOBS")
	for _, l := range ls {
		row(t, l.Key, limitConcurrency(l), limitRate(l), strconv.Itoa(l.InFlight), intp(l.TokensLeft),
			strconv.Itoa(l.Waiting), strconv.Itoa(l.Jobs))
	}
}

func limitConcurrency(l *chronos.Limit) string {
	if l.MaxConcurrency == nil {
		return "-"
	}
	return strconv.Itoa(*l.MaxConcurrency)
}

func limitRate(l *chronos.Limit) string {
	if l.Rate == nil {
		return "-"
	}
	if l.Window() == 1 {
		return fmt.Sprintf("%d/s", *l.Rate)
	}
	return fmt.Sprintf("%d/%ds", *l.Rate, l.Window())
}

func limitsGet(a *apiFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "get KEY", Short: "show one limit and its state", Args: exactArgs(1, "one limit key")}
	return getCmd(a, cmd, (*client.Client).GetLimit, func(t *tabwriter.Writer, l *chronos.Limit) string { fields(t, l); return "" })
}

func limitsPut(a *apiFlags) *cobra.Command {
	var conc, rate, per int
	cmd := &cobra.Command{
		Use:   "put KEY",
		Short: "create or replace a limit (--max-concurrency and/or --rate)",
		Example: "  chronos limits put api.example.com --max-concurrency 5\n" +
			"  chronos limits put sms --rate 100 --per-seconds 60",
		Args: exactArgs(1, "one limit key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s client.LimitSettings
			fl := cmd.Flags()
			if fl.Changed("max-concurrency") {
				s.MaxConcurrency = &conc
			}
			if fl.Changed("rate") {
				s.Rate = &rate
			}
			if fl.Changed("per-seconds") {
				s.PerSeconds = &per
			}
			if s.MaxConcurrency == nil && s.Rate == nil {
				return usagef("want --max-concurrency, --rate or both")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.PutLimit(cmd.Context(), args[0], s)
			return a.out.printResult(l, err, func(t *tabwriter.Writer) string { fields(t, l); return "" })
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&conc, "max-concurrency", 0, "runs of the key leased or running at once, cluster-wide")
	fl.IntVar(&rate, "rate", 0, "attempts started per --per-seconds")
	fl.IntVar(&per, "per-seconds", 1, "the rate's window in seconds")
	return cmd
}

func limitsDelete(a *apiFlags) *cobra.Command {
	return a.deleteCmd(&cobra.Command{
		Use:   "delete KEY...",
		Short: "delete limits no job names",
		Args:  atLeastArgs(1, "limit keys"),
	}, "limit", (*client.Client).DeleteLimit)
}
