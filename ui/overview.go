package ui

import (
	"fmt"
	nethttp "net/http"

	"github.com/chronoshq/chronos"
)

// chart is the overview's bar chart of runs finished per minute, stacked
// by outcome, drawn as SVG on the server (no script, no library).
type chart struct {
	W, H    int
	Max     int64
	Summary string
	Bars    []bar
	Ticks   []tick // the time axis: a mark every tickEvery minutes
}

// tick is one mark of the chart's time axis: X in the bars' coordinates,
// Pct the same as a percentage of the width (the labels sit outside the
// stretched drawing, so their text is not stretched), Anchor where the
// label hangs so that the first and last stay inside.
type tick struct {
	X      float64
	Pct    float64
	Anchor string
	Label  string
}

// tickEvery is the spacing of the time axis' marks, in minutes.
const tickEvery = 10

type bar struct {
	X, W, YOk, HOk, YDead, HDead float64
	Label                        string
}

type count struct {
	Status chronos.RunStatus
	N      int64
	Note   string
}

// overviewPage is GET /ui/.
func (c *Console) overviewPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	o, err := c.db.Overview(r.Context())
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	minutes, err := c.finished(r.Context(), o.Now)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	var succeeded, dead int64
	for _, m := range minutes {
		succeeded += m.Succeeded
		dead += m.Dead
	}
	p50, p99 := lagPercentiles(minutes)
	counts := []count{
		{chronos.StatusPending, o.Active[chronos.StatusPending], "now"},
		{chronos.StatusLeased, o.Active[chronos.StatusLeased], "now"},
		{chronos.StatusRunning, o.Active[chronos.StatusRunning], "now"},
		{chronos.StatusSucceeded, succeeded, "last hour"},
		{chronos.StatusDead, dead, "last hour"},
	}
	ch := chart{W: 600, H: 120}
	for _, m := range minutes {
		ch.Max = max(ch.Max, m.Succeeded+m.Dead)
	}
	scale := 0.0
	if ch.Max > 0 {
		scale = float64(ch.H) / float64(ch.Max)
	}
	bw := float64(ch.W) / float64(max(len(minutes), 1))
	for i, m := range minutes {
		hOk, hDead := float64(m.Succeeded)*scale, float64(m.Dead)*scale
		ch.Bars = append(ch.Bars, bar{X: float64(i) * bw, W: bw * 0.85,
			YOk: float64(ch.H) - hOk, HOk: hOk, YDead: float64(ch.H) - hOk - hDead, HDead: hDead,
			Label: fmt.Sprintf("%s UTC: %d succeeded, %d dead", m.Minute.Format("15:04"), m.Succeeded, m.Dead)})
	}
	for i, m := range minutes {
		if m.Minute.Minute()%tickEvery != 0 {
			continue
		}
		x := float64(i)*bw + bw*0.425 // under the middle of the minute's bar
		t := tick{X: x, Pct: 100 * x / float64(ch.W), Anchor: "middle", Label: m.Minute.UTC().Format("15:04")}
		switch {
		case t.Pct < 4:
			t.Anchor = "start"
		case t.Pct > 96:
			t.Anchor = "end"
		}
		ch.Ticks = append(ch.Ticks, t)
	}
	ch.Summary = fmt.Sprintf("%d runs in the last hour, at most %d in a minute", succeeded+dead, ch.Max)
	limits, err := c.db.Limits(r.Context())
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "overview", "Overview", map[string]any{"O": o, "Counts": counts, "Chart": ch, "LagP50": p50, "LagP99": p99,
		"Limits": limitRows(limits)})
}
