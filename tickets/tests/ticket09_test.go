package tests

import (
	nethttp "net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestTicket09NextRunAt: next_run_at in job responses is the next
// occurrence computed in the job's time zone (seconds field, @daily, DST
// rules), in UTC. Expectations are computed here from the time zone
// database, independently of gronx.
func TestTicket09NextRunAt(t *testing.T) {
	a := parallelAPI(t)
	berlin := mustZone(t, "Europe/Berlin")
	tokyo := mustZone(t, "Asia/Tokyo")
	ny := mustZone(t, "America/New_York")
	now := time.Now()

	// nextWall is the next instant after now at wall clock h:m:s in loc,
	// for a time that exists every day.
	nextWall := func(loc *time.Location, h, m, s int) time.Time {
		l := now.In(loc)
		c := time.Date(l.Year(), l.Month(), l.Day(), h, m, s, 0, loc)
		for !c.After(now) {
			l = l.AddDate(0, 0, 1)
			c = time.Date(l.Year(), l.Month(), l.Day(), h, m, s, 0, loc)
		}
		return c.UTC()
	}
	// nextDate is the next instant after now on month/day at h:m in loc.
	nextDate := func(loc *time.Location, month time.Month, day, h, m int) time.Time {
		for y := now.In(loc).Year(); ; y++ {
			if c := time.Date(y, month, day, h, m, 0, 0, loc); c.After(now) {
				return c.UTC()
			}
		}
	}
	springDay, springAt := nextTransition(t, ny, now, true)
	fallDay, fallAt := nextTransition(t, ny, now, false)

	cases := []struct {
		name, cron, zone string
		want             time.Time
	}{
		{"berlin 03:00 daily", "0 3 * * *", "Europe/Berlin", nextWall(berlin, 3, 0, 0)},
		{"berlin winter date is 02:00Z", "0 3 15 1 *", "Europe/Berlin", nextDate(berlin, time.January, 15, 3, 0)},
		{"berlin summer date is 01:00Z", "0 3 15 7 *", "Europe/Berlin", nextDate(berlin, time.July, 15, 3, 0)},
		{"seconds field", "30 15 3 * * *", "Europe/Berlin", nextWall(berlin, 3, 15, 30)},
		{"@daily in Tokyo", "@daily", "Asia/Tokyo", nextWall(tokyo, 0, 0, 0)},
		{"utc default", "45 6 * * *", "", nextWall(time.UTC, 6, 45, 0)},
		// 02:30 does not exist on the spring-forward day: fire once at the
		// first instant after the gap.
		{"dst gap", "30 2 " + dayMonth(springDay), "America/New_York", springAt},
		// 01:30 happens twice on the fall-back day: fire at the first.
		{"dst repeat", "30 1 " + dayMonth(fallDay), "America/New_York", fallAt},
	}
	if w := cases[1].want; w.Hour() != 2 {
		t.Fatalf("test bug: Berlin winter 03:00 is %v", w)
	}
	if w := cases[2].want; w.Hour() != 1 {
		t.Fatalf("test bug: Berlin summer 03:00 is %v", w)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := apiJobBody(c.name)
			body["cron_expr"] = c.cron
			if c.zone != "" {
				body["timezone"] = c.zone
			}
			created := a.createJob(body)
			path := "/v1/jobs/" + apiItoa(created.ID)
			got := apiDecode[*chronos.Job](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))
			for _, j := range []*chronos.Job{created, got} {
				if j.NextRunAt == nil || !j.NextRunAt.Equal(c.want) {
					t.Fatalf("%s in %q: next_run_at %v, want %v", c.cron, c.zone, j.NextRunAt, c.want)
				}
				if j.NextRunAt.Location() != time.UTC {
					t.Fatalf("next_run_at not in UTC: %v", j.NextRunAt)
				}
			}
			raw := apiDecode[map[string]any](t, a.call("GET", path, nil))
			if s, _ := raw["next_run_at"].(string); s != c.want.Format(time.RFC3339) {
				t.Fatalf("wire next_run_at %q, want %q", s, c.want.Format(time.RFC3339))
			}
		})
	}

	// Lists show it too, and a PATCH of the time zone recomputes it.
	j := a.createJob(map[string]any{"name": "tz", "cron_expr": "0 3 * * *", "timezone": "Europe/Berlin", "target_url": "http://127.0.0.1:9/x"})
	page := apiDecode[apiJobPage](t, a.call("GET", "/v1/jobs?limit=500", nil).want(t, nethttp.StatusOK))
	found := false
	for _, pj := range page.Jobs {
		if pj.ID == j.ID {
			found = true
			if pj.NextRunAt == nil || !pj.NextRunAt.Equal(nextWall(berlin, 3, 0, 0)) {
				t.Fatalf("listed next_run_at %v", pj.NextRunAt)
			}
		}
	}
	if !found {
		t.Fatal("job not listed")
	}
	p := apiDecode[*chronos.Job](t, a.call("PATCH", "/v1/jobs/"+apiItoa(j.ID), map[string]any{"timezone": "Asia/Tokyo"}).want(t, nethttp.StatusOK))
	if p.NextRunAt == nil || !p.NextRunAt.Equal(nextWall(tokyo, 3, 0, 0)) {
		t.Fatalf("after timezone PATCH next_run_at %v, want %v", p.NextRunAt, nextWall(tokyo, 3, 0, 0))
	}

	// A one-shot's next_run_at is its run_at.
	at := now.Add(2 * time.Hour).UTC().Truncate(time.Second)
	shot := a.createJob(map[string]any{"name": "once", "run_at": at.Format(time.RFC3339), "target_url": "http://127.0.0.1:9/x"})
	if shot.NextRunAt == nil || !shot.NextRunAt.Equal(at) {
		t.Fatalf("one-shot next_run_at %v, want %v", shot.NextRunAt, at)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

// nextTransition finds the next day (in loc) after now whose UTC offset
// rises (spring) or falls (autumn), and the instant a job should fire on
// it: for spring, "30 2" → the transition instant (first after the gap);
// for autumn, "30 1" → the first 01:30 (before the clocks go back).
func nextTransition(t *testing.T, loc *time.Location, now time.Time, spring bool) (time.Time, time.Time) {
	t.Helper()
	l := now.In(loc)
	day := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc).AddDate(0, 0, 1)
	for i := 0; i < 400; i++ {
		next := day.AddDate(0, 0, 1)
		_, off0 := day.Zone()
		_, off1 := next.Zone()
		if (spring && off1 > off0) || (!spring && off1 < off0) {
			// Find the transition to the minute.
			at := day
			for {
				if _, o := at.Zone(); o != off0 {
					break
				}
				at = at.Add(time.Minute)
			}
			if spring {
				return day, at.UTC()
			}
			// 01:30 at the offset before the change.
			first := time.Date(day.Year(), day.Month(), day.Day(), 1, 30, 0, 0, time.FixedZone("before", off0))
			return day, first.UTC()
		}
		day = next
	}
	t.Fatalf("no DST transition in %s within 400 days", loc)
	return time.Time{}, time.Time{}
}

func dayMonth(d time.Time) string {
	return apiItoa(int64(d.Day())) + " " + apiItoa(int64(d.Month())) + " *"
}

// TestTicket09ZoneIsIANA: a job's time zone is an IANA zone (or UTC), the
// same on every instance. "Local" and the zoneinfo entries that follow the
// machine ("localtime") or are not zones are 400s naming timezone, at
// create and PATCH, so next_run_at never depends on an instance's TZ.
func TestTicket09ZoneIsIANA(t *testing.T) {
	a := parallelAPI(t)
	j := a.createJob(apiJobBody("zoned"))
	for _, tz := range []string{"Local", "localtime", "posixrules", "right/Europe/Berlin"} {
		body := apiJobBody("local")
		body["timezone"] = tz
		wantInvalid(t, a.call("POST", "/v1/jobs", body), "timezone")
		wantInvalid(t, a.call("PATCH", "/v1/jobs/"+apiItoa(j.ID), map[string]any{"timezone": tz}), "timezone")
	}
	body := apiJobBody("berlin")
	body["timezone"] = "Europe/Berlin"
	a.call("POST", "/v1/jobs", body).want(t, nethttp.StatusCreated)
}
