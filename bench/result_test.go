package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestResultJSONAndTable(t *testing.T) {
	t.Parallel()
	r := &result{Scenario: "x"}
	r.param("jobs", 3)
	r.metric("rate", 1234.56789, "runs/s")
	r.metric("postgres_cpu_per_run", nan, "µs")
	r.target("first_delivery", 12.5, "ms", "≤ 20ms")
	r.Tables = []table{{Name: "per window", Columns: []string{"end_s", "lag"}, Rows: [][]float64{{5, 1.25}, {10, nan}}}}
	r.note("a note")
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metrics map[string]*float64 `json:"metrics"`
		Targets map[string]string   `json:"targets"`
		Tables  map[string]struct {
			Rows [][]*float64 `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if got.Metrics["postgres_cpu_per_run"] != nil || *got.Metrics["rate"] != 1234.5679 {
		t.Errorf("metrics %s: want n/a as null and figures rounded", raw)
	}
	if got.Targets["first_delivery"] != "≤ 20ms" {
		t.Errorf("targets %s", raw)
	}
	if rows := got.Tables["per window"].Rows; len(rows) != 2 || rows[1][1] != nil || *rows[0][1] != 1.25 {
		t.Errorf("tables %s", raw)
	}

	var buf bytes.Buffer
	printTable(&buf, r)
	out := buf.String()
	for _, want := range []string{"x  (jobs=3)", "1235 runs/s", "n/a µs", "12.5 ms", "target ≤ 20ms", "per window:", "end_s", "note: a note"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestMedianSkipsNA(t *testing.T) {
	t.Parallel()
	mk := func(a, b float64) *result {
		r := &result{Scenario: "x"}
		r.metric("a", a, "")
		r.metric("b", b, "")
		return r
	}
	m := medianResult([]*result{mk(1, nan), mk(3, nan), mk(2, 5)})
	if v, _ := m.Get("a"); v != 2 {
		t.Errorf("median a = %v, want 2", v)
	}
	if v, _ := m.Get("b"); v != 5 {
		t.Errorf("median b = %v, want 5 (the one run that measured it)", v)
	}
	m = medianResult([]*result{mk(1, nan)})
	if v, _ := m.Get("b"); !math.IsNaN(v) {
		t.Errorf("median of n/a = %v, want n/a", v)
	}
}

// TestMedianNotesEveryRunOfATarget: the median of a goal's figure comes
// with each run's value, in the order they ran, so the spread of a noisy
// series is printed beside it; figures without a target are not.
func TestMedianNotesEveryRunOfATarget(t *testing.T) {
	t.Parallel()
	mk := func(ratio, rate float64) *result {
		r := &result{Scenario: "burst"}
		r.target("ratio_to_river", ratio, "×", "≥ 1.5")
		r.metric("runs_per_s", rate, "runs/s")
		return r
	}
	m := medianResult([]*result{mk(1.24, 8295), mk(0.94, 8723), mk(nan, 12368)})
	if v, _ := m.Get("ratio_to_river"); math.Abs(v-1.09) > 1e-9 {
		t.Errorf("median ratio = %v, want 1.09 (of the two runs that measured it)", v)
	}
	want := "ratio_to_river, run by run: 1.24, 0.94, n/a ×"
	if !slices.Contains(m.Notes, want) {
		t.Errorf("notes = %q, want %q among them", m.Notes, want)
	}
	for _, n := range m.Notes {
		if strings.HasPrefix(n, "runs_per_s") {
			t.Errorf("a figure without a target got a note: %q", n)
		}
	}
	if m = medianResult([]*result{mk(1.24, 8295)}); len(m.Notes) != 0 {
		t.Errorf("one run: notes %q, want none", m.Notes)
	}
}

// TestMedianOfTheCPUReference: each run reads the machine's speed as it
// starts; the median's reading is the median of theirs, in its place
// among the parameters, not the first run's.
func TestMedianOfTheCPUReference(t *testing.T) {
	t.Parallel()
	mk := func(ref float64) *result {
		r := &result{Scenario: "burst"}
		r.param("load_avg", "1.00 1.00 1.00")
		r.param("cpu_ref_us", ref)
		return r
	}
	m := medianResult([]*result{mk(9.5), mk(4.75), mk(5.25)})
	want := []param{{"load_avg", "1.00 1.00 1.00"}, {"cpu_ref_us", 5.25}, {"median_of", 3}}
	if !slices.Equal(m.Params, want) {
		t.Errorf("params = %v, want %v", m.Params, want)
	}
}
