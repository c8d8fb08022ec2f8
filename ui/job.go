package ui

import (
	nethttp "net/http"
	"net/url"
	"strconv"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

const runsPerPage = 50

var runStatuses = []chronos.RunStatus{chronos.StatusPending, chronos.StatusLeased, chronos.StatusRunning, chronos.StatusSucceeded, chronos.StatusDead}

// jobPage is GET /ui/jobs/{id}: the definition, the next fire times (as
// GET /v1/jobs/{id}/schedule), the runs newest first (?status=, ?cursor=)
// and the audit history newest first (as GET /v1/jobs/{id}/history,
// ?hcursor=).
func (c *Console) jobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	ctx := r.Context()
	j, err := c.db.Job(ctx, id)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	q := r.URL.Query()
	f := sql.RunFilter{Cursor: q.Get("cursor"), Limit: runsPerPage, Status: chronos.RunStatus(q.Get("status"))}
	if !f.Status.Valid() {
		f.Status = ""
	}
	runs, next, err := c.db.Runs(ctx, id, f)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	fires, err := c.previewOf(ctx, j)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	entries, hnext, err := c.db.History(ctx, id, q.Get("hcursor"), historyPerPage)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	red := j.Redacted()
	base := Prefix + "jobs/" + strconv.FormatInt(id, 10)
	d := map[string]any{"Job": red, "Headers": red.Headers, "Labels": sortedLabels(red.Labels), "Runs": runs,
		"Status": string(f.Status), "Statuses": runStatuses, "Fires": fires, "History": auditRows(entries)}
	if next != "" {
		v := url.Values{"cursor": {next}}
		if f.Status != "" {
			v.Set("status", string(f.Status))
		}
		d["NextURL"] = base + "?" + v.Encode() + "#runs"
	}
	if hnext != "" {
		d["HistoryNextURL"] = base + "?" + url.Values{"hcursor": {hnext}}.Encode() + "#history"
	}
	c.render(w, r, s, nethttp.StatusOK, "job", j.Name, d)
}

// formData is what the create and edit form shows.
func formData(id int64, f jobForm, err error) map[string]any {
	shown, other := fieldErrors(err)
	d := map[string]any{"ID": id, "Form": f, "Fields": shown, "Other": other, "Zones": zones(),
		"Methods":  []string{"POST", "GET", "PUT", "PATCH", "DELETE", "HEAD"},
		"Backoffs": []string{string(chronos.BackoffExponential), string(chronos.BackoffLinear)},
		"Overlaps": []string{string(chronos.OverlapAllow), string(chronos.OverlapSkip), string(chronos.OverlapQueueOne)},
		"Redacted": chronos.Redacted}
	if err != nil {
		d["Error"] = chronos.ErrorMessage(err)
	}
	return d
}

// newJobPage is GET /ui/jobs/new.
func (c *Console) newJobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	if !s.CanWrite() {
		c.fail(w, r, s, nethttp.StatusForbidden, "Your API key ("+s.Name+") has the read role: it may look, not change.")
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "jobform", "New job", formData(0, defaultForm(), nil))
}

// editJobPage is GET /ui/jobs/{id}/edit.
func (c *Console) editJobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	if !s.CanWrite() {
		c.fail(w, r, s, nethttp.StatusForbidden, "Your API key ("+s.Name+") has the read role: it may look, not change.")
		return
	}
	j, err := c.db.Job(r.Context(), id)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "jobform", "Edit "+j.Name, formData(id, formOf(j), nil))
}

// createJob is POST /ui/jobs.
func (c *Console) createJob(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	f := parseForm(r.PostForm)
	u, err := f.update(true)
	var j *chronos.Job
	if err == nil {
		j, err = chronos.NewJob(u)
	}
	if err == nil {
		err = c.checkTarget(j.TargetURL)
	}
	if err == nil {
		err = c.db.CreateJob(r.Context(), j)
	}
	if err != nil {
		if statusOf(err) != nethttp.StatusBadRequest {
			c.failErr(w, r, s, err)
			return
		}
		c.render(w, r, s, nethttp.StatusBadRequest, "jobform", "New job", formData(0, f, err))
		return
	}
	c.log.Info("console: job created", "job_id", j.ID, "key", s.Name)
	c.redirectDone(w, r, Prefix+"jobs/"+strconv.FormatInt(j.ID, 10), "created")
}

// updateJob is POST /ui/jobs/{id}: the edit form.
func (c *Console) updateJob(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	f := parseForm(r.PostForm)
	u, err := f.update(false)
	if err == nil {
		err = c.checkTarget(f.TargetURL)
	}
	if err == nil {
		_, err = c.db.UpdateJob(r.Context(), id, u)
	}
	if err != nil {
		if statusOf(err) != nethttp.StatusBadRequest {
			c.failErr(w, r, s, err)
			return
		}
		c.render(w, r, s, nethttp.StatusBadRequest, "jobform", "Edit "+f.Name, formData(id, f, err))
		return
	}
	c.log.Info("console: job updated", "job_id", id, "key", s.Name)
	c.redirectDone(w, r, Prefix+"jobs/"+strconv.FormatInt(id, 10), "saved")
}

// deleteJobPage is GET /ui/jobs/{id}/delete: the confirmation.
func (c *Console) deleteJobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	if !s.CanWrite() {
		c.fail(w, r, s, nethttp.StatusForbidden, "Your API key ("+s.Name+") has the read role: it may look, not change.")
		return
	}
	j, err := c.db.Job(r.Context(), id)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "delete", "Delete "+j.Name, j.Redacted())
}

// deleteJob is POST /ui/jobs/{id}/delete.
func (c *Console) deleteJob(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	if err := c.db.DeleteJob(r.Context(), id); err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.log.Info("console: job deleted", "job_id", id, "key", s.Name)
	c.redirectDone(w, r, jobsListPath, "deleted")
}

// checkTarget refuses a target URL whose host is a literal address the
// outbound policy refuses, as the API does.
func (c *Console) checkTarget(u string) error {
	if err := c.cfg.TargetPolicy.CheckURL(u); err != nil {
		return chronos.InvalidFields(map[string]string{"target_url": err.Error()})
	}
	return nil
}
