package ui

import (
	"context"
	nethttp "net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// runsPerPage is a page of the dead letters; jobRunsPerPage a page of one
// job's runs, fewer so that the job page stays short (the older ones are
// a keyset page away, as GET /v1/jobs/{id}/runs pages them).
const (
	runsPerPage    = 50
	jobRunsPerPage = 20
)

var runStatuses = []chronos.RunStatus{chronos.StatusPending, chronos.StatusLeased, chronos.StatusRunning, chronos.StatusSucceeded, chronos.StatusDead}

// jobRuns is one page of a job's runs, newest first.
type jobRuns struct {
	Job      *chronos.Job
	Runs     []*chronos.Run
	Status   string
	Statuses []chronos.RunStatus
	Cursor   string
	PerPage  int
	// NextURL and NewestURL are the job page at the older page and at
	// the first; the Fragment URLs the same page of runs alone, for htmx.
	NextURL, NewestURL           string
	FragmentNext, FragmentNewest string
}

// runsOf reads the page of j's runs that the query asks for (?status=,
// ?cursor=), by sql.Runs, the function behind GET /v1/jobs/{id}/runs.
func (c *Console) runsOf(ctx context.Context, j *chronos.Job, q url.Values) (*jobRuns, error) {
	f := sql.RunFilter{Cursor: q.Get("cursor"), Limit: jobRunsPerPage, Status: chronos.RunStatus(q.Get("status"))}
	if !f.Status.Valid() {
		f.Status = ""
	}
	runs, next, err := c.db.Runs(ctx, j.ID, f)
	if err != nil {
		return nil, err
	}
	d := &jobRuns{Job: j, Runs: runs, Status: string(f.Status), Statuses: runStatuses, Cursor: f.Cursor, PerPage: jobRunsPerPage}
	base := Prefix + "jobs/" + strconv.FormatInt(j.ID, 10)
	link := func(cursor string) (page, fragment string) {
		v := setNonEmpty(url.Values{}, map[string]string{"cursor": cursor, "status": string(f.Status)})
		qs := ""
		if len(v) > 0 {
			qs = "?" + v.Encode()
		}
		return base + qs + "#runs", base + "/runs" + qs
	}
	if next != "" {
		d.NextURL, d.FragmentNext = link(next)
	}
	if f.Cursor != "" {
		d.NewestURL, d.FragmentNewest = link("")
	}
	return d, nil
}

// jobPage is GET /ui/jobs/{id}: the definition, the signing secrets' state,
// the next fire times (as GET /v1/jobs/{id}/schedule), a page of runs
// newest first (?status=, ?cursor=) and the audit history newest first (as
// GET /v1/jobs/{id}/history, ?hcursor=).
func (c *Console) jobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, j, ok := byPathID(c, w, r, s, c.db.Job)
	if !ok {
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	red := j.Redacted()
	runs, err := c.runsOf(ctx, red, q)
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
	base := Prefix + "jobs/" + strconv.FormatInt(id, 10)
	d := map[string]any{"Job": red, "Headers": red.Headers, "Labels": sortedLabels(red.Labels), "Runs": runs,
		"Fires": fires, "History": auditRows(entries), "MaxGrace": int(chronos.MaxRotationGrace / time.Second)}
	if err := c.limitOf(ctx, j, d); err != nil {
		c.failErr(w, r, s, err)
		return
	}
	if hnext != "" {
		d["HistoryNextURL"] = base + "?" + url.Values{"hcursor": {hnext}}.Encode() + "#history"
	}
	c.render(w, r, s, nethttp.StatusOK, "job", j.Name, d)
}

// jobRunsPage is GET /ui/jobs/{id}/runs: one page of the job's runs, the
// fragment htmx swaps into the job page; a browser without htmx is sent
// to the job page at that page of runs.
func (c *Console) jobRunsPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	if r.Header.Get("HX-Request") != "true" {
		u := Prefix + "jobs/" + strconv.FormatInt(id, 10)
		if r.URL.RawQuery != "" {
			u += "?" + r.URL.RawQuery
		}
		nethttp.Redirect(w, r, u+"#runs", nethttp.StatusSeeOther)
		return
	}
	j, err := c.db.Job(r.Context(), id)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	runs, err := c.runsOf(r.Context(), j.Redacted(), r.URL.Query())
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.renderTemplate(w, s, nethttp.StatusOK, "job", "jobruns", runs)
}

// formData is what the create and edit form shows.
func formData(id int64, f jobForm, err error) map[string]any {
	shown, other := fieldErrors(err)
	d := map[string]any{"ID": id, "Form": f, "Fields": shown, "Other": other, "Zones": zones(),
		"Methods":   []string{"POST", "GET", "PUT", "PATCH", "DELETE", "HEAD"},
		"Backoffs":  []string{string(chronos.BackoffExponential), string(chronos.BackoffLinear)},
		"Overlaps":  []string{string(chronos.OverlapAllow), string(chronos.OverlapSkip), string(chronos.OverlapQueueOne)},
		"Misfires":  []string{string(chronos.MisfireOne), string(chronos.MisfireNone), string(chronos.MisfireAll)},
		"MaxJitter": chronos.MaxJitterSeconds, "MaxDeadline": chronos.MaxStartingDeadline,
		"Redacted": chronos.Redacted}
	d["CalendarPolicies"] = []string{string(chronos.CalendarSkip), string(chronos.CalendarNextBusinessDay)}
	if err != nil {
		d["Error"] = chronos.ErrorMessage(err)
	}
	return d
}

// newJobPage is GET /ui/jobs/new.
func (c *Console) newJobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	if c.readOnly(w, r, s) {
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "jobform", "New job", c.withCalendars(r.Context(), formData(0, defaultForm(), nil)))
}

// editJobPage is GET /ui/jobs/{id}/edit.
func (c *Console) editJobPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	j, ok := c.jobToChange(w, r, s)
	if !ok {
		return
	}
	c.render(w, r, s, nethttp.StatusOK, "jobform", "Edit "+j.Name, c.withCalendars(r.Context(), formData(j.ID, formOf(j), nil)))
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
		err = c.checkTargets(j.TargetURL, f.OnDeadURL)
	}
	secret := ""
	if err == nil && r.PostForm.Get("generate_signing_secret") == "true" {
		// As POST /v1/jobs with generate_signing_secret: the job's own
		// secret from its first delivery, shown once below.
		secret = chronos.NewSigningSecret()
		j.SigningSecrets = []chronos.SigningSecret{{Secret: secret, CreatedAt: time.Now().UTC()}}
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
	if secret != "" {
		w.Header().Set("Cache-Control", "no-store")
		c.render(w, r, s, nethttp.StatusOK, "secret", "Signing secret of "+j.Name,
			map[string]any{"Job": j.Redacted(), "Secret": secret, "Created": true})
		return
	}
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
		err = c.checkTargets(f.TargetURL, f.OnDeadURL)
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
	j, ok := c.jobToChange(w, r, s)
	if !ok {
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

// checkTargets refuses a target URL or on_dead_url whose host is a
// literal address the outbound policy refuses, as the API does (the alert
// goes out through the same transport).
func (c *Console) checkTargets(target, onDead string) error {
	bad := map[string]string{}
	if err := c.cfg.TargetPolicy.CheckURL(target); err != nil {
		bad["target_url"] = err.Error()
	}
	if onDead != "" {
		if err := c.cfg.TargetPolicy.CheckURL(onDead); err != nil {
			bad["on_dead_url"] = err.Error()
		}
	}
	if len(bad) > 0 {
		return chronos.InvalidFields(bad)
	}
	return nil
}
