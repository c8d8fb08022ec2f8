package main

import (
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

// newHostsCmd is `chronos hosts [ORIGIN]`: the hosts in trouble, with
// their back-pressure and circuit breaker (GET /v1/hosts), or one.
func newHostsCmd(env *environ) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts [ORIGIN]",
		Short: "list the hosts that deferred runs or failed, with their circuit breaker (or show one)",
		Example: "  chronos hosts\n  chronos hosts https://api.example.com\n" +
			"  chronos hosts -o json",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("hosts: at most one origin, not %d arguments", len(args))
			}
			return nil
		},
	}
	a := addAPIFlags(cmd, env)
	cmd.RunE = a.runE(func(cmd *cobra.Command, c *client.Client, args []string) error {
		if len(args) == 1 {
			h, err := c.GetHost(cmd.Context(), args[0])
			return a.out.printResult(h, err, func(t *tabwriter.Writer) string {
				fields(t, h)
				return ""
			})
		}
		hs, err := c.ListHosts(cmd.Context())
		return a.out.printResult(hs, err, func(t *tabwriter.Writer) string {
			hostTable(t, hs)
			if len(hs) == 0 {
				return "(no host has deferred runs or failed)"
			}
			return ""
		})
	})
	return cmd
}

// hostTable prints hosts as a table.
func hostTable(t *tabwriter.Writer, hs []chronos.Host) {
	row(t, "ORIGIN", "STATE", "UNTIL", "FAILURES", "DEFERRALS", "OPENS", "LAST ERROR")
	for _, h := range hs {
		until := "-"
		switch h.State {
		case chronos.HostDeferred:
			until = when(h.DeferredUntil)
		case chronos.HostOpen, chronos.HostProbing:
			until = when(h.OpenUntil)
		}
		row(t, h.Origin, string(h.State), until, strconv.Itoa(h.ConsecutiveFailures),
			strconv.FormatInt(h.Deferrals, 10), strconv.FormatInt(h.BreakerOpens, 10), truncate(h.LastError, 60))
	}
}
