package ui

import nethttp "net/http"

// routes maps the console's paths. Pages are GET; everything that changes
// something is a POST behind the session, the write role and the CSRF
// check (c.action).
func (c *Console) routes() *nethttp.ServeMux {
	m := nethttp.NewServeMux()
	m.Handle("GET "+Prefix+"static/", c.headers(c.static))
	m.Handle("GET "+Prefix+"login", c.headers(nethttp.HandlerFunc(c.loginPage)))
	m.Handle("POST "+Prefix+"login", c.headers(nethttp.HandlerFunc(c.login)))
	m.Handle("POST "+Prefix+"logout", c.guarded(false, c.logout))

	m.Handle("GET "+Prefix+"{$}", c.page(c.overviewPage))
	m.Handle("GET "+Prefix+"jobs", c.page(c.jobsPage))
	m.Handle("GET "+Prefix+"jobs/new", c.page(c.newJobPage))
	m.Handle("GET "+Prefix+"jobs/{id}", c.page(c.jobPage))
	m.Handle("GET "+Prefix+"jobs/{id}/edit", c.page(c.editJobPage))
	m.Handle("GET "+Prefix+"jobs/{id}/runs", c.page(c.jobRunsPage))
	m.Handle("GET "+Prefix+"jobs/{id}/delete", c.page(c.deleteJobPage))
	m.Handle("GET "+Prefix+"jobs/{id}/backfill", c.page(c.backfillPage))
	m.Handle("GET "+Prefix+"runs", c.page(c.runsPage))
	m.Handle("GET "+Prefix+"runs/{id}", c.page(c.runPage))
	m.Handle("GET "+Prefix+"schedule/preview", c.page(c.schedulePreview))
	m.Handle("GET "+Prefix+"live", c.page(c.livePage))
	m.Handle("GET "+Prefix+"hosts", c.page(c.hostsPage))
	m.Handle("GET "+Prefix+"calendars", c.page(c.calendarsPage))
	m.Handle("GET "+Prefix+"events", c.page(c.events))

	m.Handle("POST "+Prefix+"jobs", c.action(c.createJob))
	m.Handle("POST "+Prefix+"jobs/bulk", c.action(c.bulkJobs))
	m.Handle("POST "+Prefix+"jobs/{id}", c.action(c.updateJob))
	m.Handle("POST "+Prefix+"jobs/{id}/pause", c.action(c.pauseJob))
	m.Handle("POST "+Prefix+"jobs/{id}/resume", c.action(c.resumeJob))
	m.Handle("POST "+Prefix+"jobs/{id}/trigger", c.action(c.triggerJob))
	m.Handle("POST "+Prefix+"jobs/{id}/delete", c.action(c.deleteJob))
	m.Handle("POST "+Prefix+"jobs/{id}/backfill", c.action(c.backfill))
	m.Handle("POST "+Prefix+"jobs/{id}/signing-secret", c.action(c.rotateSecret))
	m.Handle("POST "+Prefix+"jobs/{id}/signing-secret/delete", c.action(c.deleteSecrets))
	m.Handle("POST "+Prefix+"runs/redrive", c.action(c.redriveRuns))
	m.Handle("POST "+Prefix+"runs/{id}/redrive", c.action(c.redriveRun))
	m.Handle("POST "+Prefix+"calendars", c.action(c.putCalendar))
	m.Handle("POST "+Prefix+"calendars/{name}/delete", c.action(c.deleteCalendar))

	m.Handle(Prefix, c.page(func(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
		c.fail(w, r, s, nethttp.StatusNotFound, "There is no page at this address.")
	}))
	return m
}
