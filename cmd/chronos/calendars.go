package main

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

func calendarsList(a *apiFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "list calendars"}
	return listCmd(a, cmd, (*client.Client).ListCalendars, func(cs []*chronos.Calendar) any { return cs }, calendarTable)
}

func calendarTable(t *tabwriter.Writer, cs []*chronos.Calendar) {
	row(t, "NAME", "DATES", "FIRST", "LAST", "JOBS", "SOURCE", "DESCRIPTION")
	for _, c := range cs {
		first, last := "-", "-"
		if n := len(c.Dates); n > 0 {
			first, last = c.Dates[0], c.Dates[n-1]
		}
		src := "dates"
		if c.ICal != nil {
			src = "ical"
		}
		row(t, c.Name, strconv.Itoa(len(c.Dates)), first, last, strconv.Itoa(c.Jobs), src, c.Description)
	}
}

func calendarsGet(a *apiFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "get NAME", Short: "show a calendar and its dates", Args: exactArgs(1, "one calendar name")}
	return getCmd(a, cmd, (*client.Client).GetCalendar, func(t *tabwriter.Writer, cal *chronos.Calendar) string {
		calendarTable(t, []*chronos.Calendar{cal})
		return "dates: " + strings.Join(cal.Dates, " ")
	})
}

func calendarsApply(a *apiFlags) *cobra.Command {
	var dates []string
	var datesFile, icalFile, description string
	cmd := &cobra.Command{
		Use:   "apply NAME (--date D... | --dates-file FILE | --ical FILE) [--description TEXT]",
		Short: "create or replace a calendar",
		Long: `Apply creates the calendar NAME, or replaces it, from dates (--date,
repeatable or comma-separated; --dates-file: one date a line, # comments)
or from an iCalendar file (--ical FILE, - for stdin: all-day events, RRULE
yearly holidays). Replacing the dates of a calendar that jobs name re-plans
their runs created ahead. Calendars also go in apply manifests (kind:
Calendar).`,
		Example: "  chronos calendars apply us-holidays --ical us-holidays.ics\n  chronos calendars apply closures --date 2026-12-24,2026-12-31",
		Args:    exactArgs(1, "one calendar name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			given := 0
			for _, b := range []bool{len(dates) > 0, datesFile != "", icalFile != ""} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usagef("calendars apply: give exactly one of --date, --dates-file or --ical")
			}
			var file []byte
			if path := cmp.Or(icalFile, datesFile); path != "" { // one of them, as given is 1
				var err error
				if file, err = readInput(cmd, path); err != nil {
					return err
				}
			}
			spec := client.CalendarSpec{Description: description}
			switch {
			case icalFile != "":
				s := string(file)
				spec.ICal = &s
			case datesFile != "":
				ds := datesOf(file)
				spec.Dates = &ds
			default:
				var ds []string
				for _, d := range dates {
					for _, x := range strings.Split(d, ",") {
						if x = strings.TrimSpace(x); x != "" {
							ds = append(ds, x)
						}
					}
				}
				spec.Dates = &ds
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cal, err := c.PutCalendar(cmd.Context(), args[0], spec)
			return a.out.printResult(cal, err, func(t *tabwriter.Writer) string { calendarTable(t, []*chronos.Calendar{cal}); return "" })
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&dates, "date", nil, "a date YYYY-MM-DD (repeatable, or comma-separated)")
	fl.StringVar(&datesFile, "dates-file", "", "a file of dates, one a line (- for stdin)")
	fl.StringVar(&icalFile, "ical", "", "an iCalendar (.ics) file (- for stdin)")
	fl.StringVar(&description, "description", "", "what the calendar is")
	return cmd
}

// readInput reads a file, or stdin for "-".
func readInput(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "-" {
		var b bytes.Buffer
		_, err := b.ReadFrom(cmd.InOrStdin())
		return b.Bytes(), err
	}
	return os.ReadFile(path)
}

// datesOf reads one date a line, skipping blank lines and # comments.
func datesOf(b []byte) []string {
	out := []string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

func calendarsDelete(a *apiFlags) *cobra.Command {
	return a.deleteCmd(&cobra.Command{
		Use:   "delete NAME...",
		Short: "delete calendars (refused while a job names one)",
		Args:  atLeastArgs(1, "calendar names"),
	}, "calendar", (*client.Client).DeleteCalendar)
}
