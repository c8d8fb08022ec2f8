package ui

import (
	nethttp "net/http"
	"strconv"

	"github.com/chronoshq/chronos"
)

// maxRedrivesShown bounds the redrives a run's page links to (newest
// first); the dead letters filtered by job and trigger list them all.
const maxRedrivesShown = 20

// runPage is GET /ui/runs/{id}: the run and every attempt, the response
// bodies shown as text (escaped), never as markup; a redrive links to the
// run it redrives, and a redriven run to its redrives.
func (c *Console) runPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, run, ok := byPathID(c, w, r, s, c.db.Run)
	if !ok {
		return
	}
	var job *chronos.Job
	if j, err := c.db.Job(r.Context(), run.JobID); err == nil {
		job = j.Redacted()
	} else if chronos.ErrorCode(err) != chronos.ENOTFOUND {
		c.failErr(w, r, s, err)
		return
	}
	redrives, err := c.db.Redrives(r.Context(), id, maxRedrivesShown)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "run", "Run "+strconv.FormatInt(id, 10),
		map[string]any{"Run": run, "Job": job, "Attempts": run.Attempts, "Redrives": redrives, "MoreRedrives": len(redrives) == maxRedrivesShown})
}

// redriveRun is POST /ui/runs/{id}/redrive: a dead run goes round again as
// a new run, whose page the browser is sent to.
func (c *Console) redriveRun(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	_, run, ok := c.newRunByPathID(w, r, s, c.db.Redrive, "console: run redriven", "run_id", "new_run_id")
	if !ok {
		return
	}
	c.redirectDone(w, r, Prefix+"runs/"+strconv.FormatInt(run.ID, 10), "redriven")
}
