package ui

import (
	"context"
	nethttp "net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/chronoshq/chronos"
)

// Job list paging: a console page shows fewer jobs than the API's maximum
// so that it stays small (each row carries a strip of recent outcomes).
const (
	jobsPerPage  = 50
	recentRuns   = 10
	maxBulkJobs  = 500
	jobsListPath = Prefix + "jobs"
)

// jobRow is one row of the job list.
type jobRow struct {
	J      *chronos.Job
	Labels []label
	Recent []*chronos.Run
	Now    time.Time
	S      *session
}

// jobsPage is GET /ui/jobs: a page of jobs in id order, searched and
// filtered as GET /v1/jobs is (sql.Jobs): ?name_prefix=, ?q=, ?label=
// (key=value terms) and ?enabled=.
func (c *Console) jobsPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	q := r.URL.Query()
	f, err := parseJobSearch(q)
	d := map[string]any{"F": f, "Back": r.URL.RequestURI()}
	jobs, ok := listPage(c, w, r, s, err, func(ctx context.Context, cursor string) ([]*chronos.Job, string, error) {
		f.Filter.Cursor, f.Filter.Limit = cursor, jobsPerPage
		return c.db.Jobs(ctx, f.Filter)
	}, f.Values(), jobsListPath, "jobs", "Jobs", d)
	if !ok {
		return
	}
	rows, err := c.rows(r.Context(), jobs, s)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	d["Rows"] = rows
	c.render(w, r, s, nethttp.StatusOK, "jobs", "Jobs", d)
}

// rows adds each job's recent runs, in one query for the page.
func (c *Console) rows(ctx context.Context, jobs []*chronos.Job, s *session) ([]jobRow, error) {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	recent, err := c.db.RecentRuns(ctx, ids, recentRuns)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]jobRow, len(jobs))
	for i, j := range jobs {
		out[i] = jobRow{J: j.Redacted(), Labels: sortedLabels(j.Labels), Recent: recent[j.ID], Now: now, S: s}
	}
	return out, nil
}

// pauseJob is POST /ui/jobs/{id}/pause.
func (c *Console) pauseJob(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	c.setEnabled(w, r, s, false)
}

// resumeJob is POST /ui/jobs/{id}/resume.
func (c *Console) resumeJob(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	c.setEnabled(w, r, s, true)
}

func (c *Console) setEnabled(w nethttp.ResponseWriter, r *nethttp.Request, s *session, on bool) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	j, err := c.db.UpdateJob(r.Context(), id, &chronos.JobUpdate{Enabled: chronos.Some(on)})
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.log.Info("console: job enabled changed", "job_id", id, "enabled", on, "key", s.Name)
	done := "paused"
	if on {
		done = "resumed"
	}
	c.afterJobAction(w, r, s, j, done)
}

// triggerJob is POST /ui/jobs/{id}/trigger.
func (c *Console) triggerJob(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, _, ok := c.newRunByPathID(w, r, s, c.db.Trigger, "console: job triggered", "job_id", "run_id")
	if !ok {
		return
	}
	j, err := c.db.Job(r.Context(), id)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.afterJobAction(w, r, s, j, "triggered")
}

// afterJobAction answers an action on one job: htmx gets the job's fresh
// row to swap in; a plain form post is sent back where it came from.
func (c *Console) afterJobAction(w nethttp.ResponseWriter, r *nethttp.Request, s *session, j *chronos.Job, done string) {
	if r.Header.Get("HX-Request") == "true" {
		rows, err := c.rows(r.Context(), []*chronos.Job{j}, s)
		if err != nil {
			c.failErr(w, r, s, err)
			return
		}
		w.Header().Set("HX-Trigger", `{"chronos:notice":"`+flashes[done]+`"}`)
		c.renderTemplate(w, s, nethttp.StatusOK, "jobs", "jobrow", rows[0])
		return
	}
	back := localPath(r.PostForm.Get("back"), jobsListPath)
	c.redirectDone(w, r, back, done)
}

// bulkJobs is POST /ui/jobs/bulk: pause or resume the selected jobs.
func (c *Console) bulkJobs(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	action := r.PostForm.Get("action")
	if action != "pause" && action != "resume" {
		c.fail(w, r, s, nethttp.StatusBadRequest, "Choose pause or resume.")
		return
	}
	ids := r.PostForm["id"]
	if len(ids) == 0 {
		c.fail(w, r, s, nethttp.StatusBadRequest, "Select the jobs to "+action+" first.")
		return
	}
	if len(ids) > maxBulkJobs {
		c.fail(w, r, s, nethttp.StatusBadRequest, "Select at most 500 jobs at once.")
		return
	}
	on := action == "resume"
	for _, v := range ids {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			c.fail(w, r, s, nethttp.StatusBadRequest, "A selected job id is not a positive integer.")
			return
		}
		if _, err := c.db.UpdateJob(r.Context(), id, &chronos.JobUpdate{Enabled: chronos.Some(on)}); err != nil && chronos.ErrorCode(err) != chronos.ENOTFOUND {
			c.failErr(w, r, s, err)
			return
		}
	}
	c.log.Info("console: jobs enabled changed", "count", len(ids), "enabled", on, "key", s.Name)
	c.redirectDone(w, r, localPath(r.PostForm.Get("back"), jobsListPath), map[bool]string{false: "paused", true: "resumed"}[on])
}

// redirectDone sends the browser to back with a flash code.
func (c *Console) redirectDone(w nethttp.ResponseWriter, r *nethttp.Request, back, done string) {
	u, _ := url.Parse(back)
	q := u.Query()
	q.Set("done", done)
	u.RawQuery = q.Encode()
	nethttp.Redirect(w, r, u.String(), nethttp.StatusSeeOther)
}

// pathID reads {id}: a positive integer, or a 404 page.
func (c *Console) pathID(w nethttp.ResponseWriter, r *nethttp.Request, s *session) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		c.fail(w, r, s, nethttp.StatusNotFound, "There is no such id.")
		return 0, false
	}
	return id, true
}

// announce publishes a freshly committed pending run on the local bus, as
// the API's trigger and redrive do: this instance's dispatcher starts it
// without waiting for its own NOTIFY.
func (c *Console) announce(run *chronos.Run) {
	at := run.AvailableAt.UTC()
	c.bus.Publish(chronos.Event{Type: chronos.EventRunChanged, Instance: c.cfg.Instance, RunID: run.ID,
		JobID: run.JobID, Status: chronos.StatusPending, AvailableAt: &at})
}
