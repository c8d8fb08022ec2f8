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
}

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
	ch.Summary = fmt.Sprintf("%d runs in the last hour, at most %d in a minute", succeeded+dead, ch.Max)
	c.render(w, r, s, nethttp.StatusOK, "overview", "Overview", map[string]any{"O": o, "Counts": counts, "Chart": ch, "LagP50": p50, "LagP99": p99})
}
