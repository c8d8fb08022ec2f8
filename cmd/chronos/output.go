package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
)

// output is how an API command prints what it got: a table for people,
// or the API's own JSON (or the same as YAML) for scripts.
type output struct {
	format string // table, json or yaml
	w      io.Writer
}

func (o *output) check() error {
	switch o.format {
	case "table", "json", "yaml":
		return nil
	}
	return usagef("-o: want table, json or yaml, not %q", o.format)
}

// print writes v as JSON or YAML, or calls table for the table form and
// prints the footer it returns (if any) below the table.
func (o *output) print(v any, table func(t *tabwriter.Writer) (footer string)) error {
	switch o.format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.w, "%s\n", b)
		return err
	case "yaml":
		// Through JSON, so YAML shows the API's field names.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(b)
		if err != nil {
			return err
		}
		_, err = o.w.Write(y)
		return err
	}
	t := tabwriter.NewWriter(o.w, 0, 0, 2, ' ', 0)
	footer := table(t)
	if err := t.Flush(); err != nil {
		return err
	}
	if footer != "" {
		_, err := fmt.Fprintln(o.w, footer)
		return err
	}
	return nil
}

// printResult is the tail of most API commands: the error of the call
// that returned v, or else v printed (see print).
func (o *output) printResult(v any, err error, table func(t *tabwriter.Writer) (footer string)) error {
	if err != nil {
		return err
	}
	return o.print(v, table)
}

// row writes one tab-separated table row.
func row(t io.Writer, cells ...string) {
	fmt.Fprintln(t, strings.Join(cells, "\t"))
}

// fields prints v (a JSON object) as FIELD VALUE rows, sorted by field,
// values in compact JSON (strings bare).
func fields(t io.Writer, v any, skip ...string) {
	b, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	row(t, "FIELD", "VALUE")
	for _, k := range keys {
		if slices.Contains(skip, k) {
			continue
		}
		row(t, k, bare(m[k]))
	}
}

func sorted(xs []string) []string {
	sort.Strings(xs)
	return xs
}

// bare renders a JSON value for a table cell: a string without quotes,
// null as "-", anything else as compact JSON.
func bare(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return "-"
		}
		return s
	}
	if string(v) == "null" || len(v) == 0 {
		return "-"
	}
	return string(v)
}

// when renders an optional time for a table cell.
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// strp renders an optional string for a table cell.
func strp(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// nextPage is the footer of a page of a list: how to ask for the next
// page (or, followed by or), or "" on the last page.
func nextPage(cursor, or string) string {
	if cursor == "" {
		return ""
	}
	return "(more: --cursor " + cursor + or + ")"
}

// intp is an optional number for a table cell ("-" when absent).
func intp(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}

// truncate shortens s to n runes for a table cell.
func truncate(s string, n int) string {
	r := []rune(strings.ReplaceAll(s, "\n", " "))
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// addOutputFlag adds -o/--output to cmd.
func addOutputFlag(cmd *cobra.Command, o *output) {
	cmd.PersistentFlags().StringVarP(&o.format, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}
