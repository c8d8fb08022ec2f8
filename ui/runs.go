package ui

import (
	"context"
	nethttp "net/http"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// runsListPath is the run list across jobs: by default the dead letters.
const runsListPath = Prefix + "runs"

var runTriggers = []chronos.Trigger{chronos.TriggerSchedule, chronos.TriggerManual, chronos.TriggerRedrive, chronos.TriggerBackfill}

// runRow is one row of the run list.
type runRow struct {
	R       *chronos.Run
	JobName string
	Redrive *sql.RedriveRef // the run's newest redrive, if any
}

// runsPage is GET /ui/runs: the runs of every job that match the filters,
// newest first, a page at a time (sql.AllRuns, as GET /v1/runs). The
// status defaults to dead: the dead-letter queue, from which a writer
// redrives the selected runs or all that match.
func (c *Console) runsPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	q := r.URL.Query()
	f, err := parseRunFilter(q)
	d := map[string]any{"F": f, "Statuses": runStatuses, "Triggers": runTriggers, "Back": r.URL.RequestURI(),
		"Max": sql.MaxRedriveBatch, "Controls": s.CanWrite() && f.Dead()}
	title := "Runs"
	if f.Dead() {
		title = "Dead letters"
	}
	runs, ok := listPage(c, w, r, s, err, func(ctx context.Context, cursor string) ([]*chronos.Run, string, error) {
		f.Query.Cursor, f.Query.Limit = cursor, runsPerPage
		return c.db.AllRuns(ctx, f.Query)
	}, f.Values(), runsListPath, "runs", title, d)
	if !ok {
		return
	}
	notes, err := c.db.Notes(r.Context(), runs)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	rows := make([]runRow, len(runs))
	for i, run := range runs {
		rows[i] = runRow{R: run, JobName: notes.JobNames[run.JobID]}
		if ref, ok := notes.Redrives[run.ID]; ok {
			rows[i].Redrive = &ref
		}
	}
	d["Rows"] = rows
	c.render(w, r, s, nethttp.StatusOK, "runs", title, d)
}
