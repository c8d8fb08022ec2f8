package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// result is what one scenario run measured: its parameters and its
// figures, in the order they are printed.
type result struct {
	Scenario string
	Params   []param
	Metrics  []metric
	Notes    []string
	// Tables are figures over time (sustained: one row per window),
	// printed after the metrics.
	Tables []table
	// Failed says why the run broke a rule (missed occurrences, lost
	// runs); the figures are still printed, and bench exits 1.
	Failed []string
}

type param struct {
	Name  string
	Value any
}

// metric is one figure. A NaN value is a figure that could not be
// measured here: "n/a" in a table, null in JSON.
type metric struct {
	Name   string
	Value  float64
	Unit   string
	Target string // what the design asks for, e.g. "≥ 12000" ("": none)
}

// table is a small grid of figures, e.g. one row per minute.
type table struct {
	Name    string
	Columns []string
	Rows    [][]float64
}

func (r *result) param(name string, v any) { r.Params = append(r.Params, param{name, v}) }

// setParam replaces the value of the parameter name, or adds it.
func (r *result) setParam(name string, v any) {
	for i := range r.Params {
		if r.Params[i].Name == name {
			r.Params[i].Value = v
			return
		}
	}
	r.param(name, v)
}

func (r *result) metric(name string, v float64, unit string) {
	r.Metrics = append(r.Metrics, metric{Name: name, Value: v, Unit: unit})
}

// target records a figure with the design's target printed beside it.
func (r *result) target(name string, v float64, unit, target string) {
	r.Metrics = append(r.Metrics, metric{Name: name, Value: v, Unit: unit, Target: target})
}

// ms records a duration in milliseconds.
func (r *result) ms(name string, d time.Duration) {
	r.metric(name, float64(d)/float64(time.Millisecond), "ms")
}

// spread records p50, p90, p99 and max of p in milliseconds, each name
// prefixed with prefix (e.g. "lag_p50").
func (r *result) spread(prefix string, p pct) {
	r.ms(prefix+"p50", p.p50)
	r.ms(prefix+"p90", p.p90)
	r.ms(prefix+"p99", p.p99)
	r.ms(prefix+"max", p.max)
}

func (r *result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *result) fail(format string, args ...any) {
	r.Failed = append(r.Failed, fmt.Sprintf(format, args...))
}

// Get returns a metric's value (tests and medians).
func (r *result) Get(name string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// MarshalJSON is the --json form: one flat object per scenario run.
func (r *result) MarshalJSON() ([]byte, error) {
	params := map[string]any{}
	for _, p := range r.Params {
		params[p.Name] = p.Value
	}
	metrics := map[string]any{}
	units := map[string]string{}
	targets := map[string]string{}
	for _, m := range r.Metrics {
		metrics[m.Name] = jsonFigure(m.Value)
		units[m.Name] = m.Unit
		if m.Target != "" {
			targets[m.Name] = m.Target
		}
	}
	type jsonTable struct {
		Columns []string `json:"columns"`
		Rows    [][]any  `json:"rows"`
	}
	var tables map[string]jsonTable
	for _, t := range r.Tables {
		if tables == nil {
			tables = map[string]jsonTable{}
		}
		jt := jsonTable{Columns: t.Columns, Rows: make([][]any, len(t.Rows))}
		for i, row := range t.Rows {
			for _, v := range row {
				jt.Rows[i] = append(jt.Rows[i], jsonFigure(v))
			}
		}
		tables[t.Name] = jt
	}
	if len(targets) == 0 {
		targets = nil
	}
	return json.Marshal(struct {
		Scenario string               `json:"scenario"`
		Params   map[string]any       `json:"params"`
		Metrics  map[string]any       `json:"metrics"`
		Units    map[string]string    `json:"units"`
		Targets  map[string]string    `json:"targets,omitempty"`
		Tables   map[string]jsonTable `json:"tables,omitempty"`
		Notes    []string             `json:"notes,omitempty"`
		Failed   []string             `json:"failed,omitempty"`
	}{r.Scenario, params, metrics, units, targets, tables, r.Notes, r.Failed})
}

// jsonFigure is a figure as JSON holds it: rounded, and null for n/a.
func jsonFigure(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return roundFigure(v)
}

// roundFigure keeps JSON readable: 4 significant decimals are plenty.
func roundFigure(v float64) float64 {
	if v == math.Trunc(v) || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return math.Round(v*10000) / 10000
}

// printTable prints a result as a short aligned table.
func printTable(w io.Writer, r *result) {
	var ps []string
	for _, p := range r.Params {
		ps = append(ps, fmt.Sprintf("%s=%v", p.Name, p.Value))
	}
	fmt.Fprintf(w, "\n%s  (%s)\n", r.Scenario, strings.Join(ps, " "))
	width := 0
	for _, m := range r.Metrics {
		width = max(width, len(m.Name))
	}
	for _, m := range r.Metrics {
		line := fmt.Sprintf("  %-*s  %12s %s", width, m.Name, formatFigure(m.Value), m.Unit)
		if m.Target != "" {
			line = fmt.Sprintf("%-*s  target %s", width+24, line, m.Target)
		}
		fmt.Fprintln(w, line)
	}
	for _, t := range r.Tables {
		printGrid(w, t)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "  FAILED: %s\n", f)
	}
}

// printGrid prints a table's columns right-aligned under their names.
func printGrid(w io.Writer, t table) {
	widths := make([]int, len(t.Columns))
	cells := make([][]string, len(t.Rows))
	for i, c := range t.Columns {
		widths[i] = len(c)
	}
	for r, row := range t.Rows {
		for i, v := range row {
			s := formatFigure(v)
			cells[r] = append(cells[r], s)
			if i < len(widths) {
				widths[i] = max(widths[i], len(s))
			}
		}
	}
	fmt.Fprintf(w, "  %s:\n", t.Name)
	line := func(items []string) {
		var b strings.Builder
		b.WriteString("   ")
		for i, s := range items {
			fmt.Fprintf(&b, " %*s", widths[min(i, len(widths)-1)], s)
		}
		fmt.Fprintln(w, b.String())
	}
	line(t.Columns)
	for _, row := range cells {
		line(row)
	}
}

func formatFigure(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "n/a"
	case v == math.Trunc(v) && a < 1e15:
		return fmt.Sprintf("%d", int64(v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// medianResult combines repeated runs of one scenario: the median of each
// figure (of the runs that measured it), with the parameters of the
// first run. Tables are per run and left out. Each figure with a target
// also gets a note with every run's value, in the order they ran: on a
// noisy machine the spread says as much as the median (a burst's ratio
// to River of 0.94, 1.15 and 1.24 has the median of a steady 1.13, 1.15
// and 1.16).
func medianResult(runs []*result) *result {
	m := &result{Scenario: runs[0].Scenario, Params: slices.Clone(runs[0].Params)}
	m.param("median_of", len(runs))
	// The machine's speed is read as each run starts: the median's is the
	// median of theirs, not the first run's.
	if v, ok := medianParam(runs, "cpu_ref_us"); ok {
		m.setParam("cpu_ref_us", v)
	}
	for _, x := range runs[0].Metrics {
		var (
			vs   []float64
			each []string // every run's value, n/a included
		)
		for _, r := range runs {
			v, ok := r.Get(x.Name)
			if !ok {
				v = nan
			}
			each = append(each, formatFigure(v))
			if !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
		m.Metrics = append(m.Metrics, metric{Name: x.Name, Value: median(vs), Unit: x.Unit, Target: x.Target})
		if x.Target != "" && len(runs) > 1 {
			m.note("%s, run by run: %s %s", x.Name, strings.Join(each, ", "), x.Unit)
		}
	}
	for _, r := range runs {
		m.Failed = append(m.Failed, r.Failed...)
	}
	return m
}

// medianParam is the median of the runs' float64 parameter name; false
// when no run has it.
func medianParam(runs []*result, name string) (float64, bool) {
	var vs []float64
	for _, r := range runs {
		for _, p := range r.Params {
			if v, ok := p.Value.(float64); ok && p.Name == name {
				vs = append(vs, v)
			}
		}
	}
	return median(vs), len(vs) > 0
}

// median of vs (sorted in place; the mean of the middle two for an even
// count), NaN for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	if len(vs)%2 == 0 {
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return vs[len(vs)/2]
}

// nan is a figure that could not be measured.
var nan = math.NaN()
