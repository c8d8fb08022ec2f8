package faults

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/instant"
)

// The delivery-control operations of the model (issue 24): limits
// (PUT and DELETE of a limit, a PATCH of a job's limit_key), backfills
// over a past range, and calendars (PUT of a calendar's dates, a PATCH
// attaching calendars to a cron job; a create may name a limit and a
// calendar too, deliveryOnCreate). The model records what each did
// for the checks of model_delivery_check_test.go; as for every other
// operation, the random draws depend only on the model's own state.

var (
	// modelLimitKeys are the limits a sequence declares.
	modelLimitKeys = []string{"k1", "k2"}
	// modelCalendarNames are the calendars a sequence puts.
	modelCalendarNames = []string{"c1", "c2"}
)

// limitVersion is one state of a limit: it took effect at some instant
// in [sent, recv]. exists is false after a DELETE; max is nil without a
// concurrency limit.
type limitVersion struct {
	sent, recv time.Time
	exists     bool
	max        *int
	rate, per  *int
}

func (v limitVersion) String() string {
	if !v.exists {
		return "deleted"
	}
	var parts []string
	if v.max != nil {
		parts = append(parts, fmt.Sprintf("max_concurrency %d", *v.max))
	}
	if v.rate != nil {
		parts = append(parts, fmt.Sprintf("rate %d/%ds", *v.rate, *v.per))
	}
	return strings.Join(parts, ", ")
}

// mbackfill is one POST /v1/jobs/{id}/backfill and its answer.
type mbackfill struct {
	job        *mjob
	from, to   time.Time
	sent, recv time.Time
	dry        bool
	ans        chronos.Backfill
}

// deliveryModel is what the model knows of the sequence's limits,
// calendars and backfills.
type deliveryModel struct {
	limits    map[string][]limitVersion // by key, in the order put
	uncertain map[string]bool           // limits whose last change has no answer: not checked
	unknown   map[string][]time.Time    // when each change of unknown outcome was sent, by key (checkRates stops there)
	cals      map[string][]string       // each calendar's dates as last put
	backfills []*mbackfill
}

func newDeliveryModel() *deliveryModel {
	return &deliveryModel{limits: map[string][]limitVersion{}, uncertain: map[string]bool{}, unknown: map[string][]time.Time{},
		cals: map[string][]string{}}
}

// declared lists the keys whose limit exists as far as the model knows.
func (dm *deliveryModel) declared() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(dm.limits)) {
		vs := dm.limits[k]
		if vs[len(vs)-1].exists && !dm.uncertain[k] {
			out = append(out, k)
		}
	}
	return out
}

// deliveryOp performs one of the delivery-control operations; k is in
// [0, 12).
func (s *seqRun) deliveryOp(k int) {
	switch {
	case k < 4:
		s.limitOp()
	case k < 8:
		s.backfill()
	default:
		s.calendarOp()
	}
}

// limitOp puts a limit (a concurrency limit of 1 to 3, a rate of 3 to 8
// per 1 or 2 s, or both: see limitBody), PATCHes an enabled job's limit_key to a
// declared limit (or clears it), or deletes a limit.
func (s *seqRun) limitOp() {
	kind := s.rng.IntN(100)
	key := modelLimitKeys[s.rng.IntN(len(modelLimitKeys))]
	body := s.limitBody()
	clearKey, k := s.rng.IntN(4) == 0, s.rng.IntN(1<<20)
	// Half the time a fast job only: a slow target under a concurrency
	// limit of one builds a backlog the drain must wait for; slow ones
	// are what puts the limit to the test at the target.
	fastOnly := s.rng.IntN(2) == 0
	declared := s.dc.declared()
	switch {
	case kind < 30 || len(declared) == 0:
		s.putLimit(key, body)
	case kind < 90:
		j := s.pickJob(func(j *mjob) bool { return j.cur().Enabled && (!fastOnly || j.behave.delay < time.Second) })
		if j == nil {
			s.logOp("limit_key", "no job")
			return
		}
		body := map[string]any{"limit_key": declared[k%len(declared)]}
		if clearKey && j.cur().LimitKey != "" {
			body["limit_key"] = nil
		}
		s.patch("limit_key", j, body)
	default:
		s.deleteLimit(key)
	}
}

// deliveryOnCreate names in a create's body, a quarter of the time, a
// declared limit, and for a cron job without an end, a tenth of the
// time, a calendar (with either policy).
func (s *seqRun) deliveryOnCreate(body map[string]any, cron bool) {
	limited, k, cal := s.rng.IntN(4) == 0, s.rng.IntN(1<<20), s.rng.IntN(10) == 0
	policy := []string{"skip", "next_business_day"}[s.rng.IntN(2)]
	if declared := s.dc.declared(); limited && len(declared) > 0 {
		body["limit_key"] = declared[k%len(declared)]
	}
	names := slices.Sorted(maps.Keys(s.dc.cals))
	if _, ends := body["ends_at"]; cal && cron && !ends && len(names) > 0 {
		body["calendars"], body["calendar_policy"] = []string{names[k%len(names)]}, policy
	}
}

// limitBody is a random limit: a concurrency limit of 1 to 3, a rate of
// 3 to 8 per 1 or 2 s, or both. With -model.slowrates (the default) the rate is 1 to 8
// instead, and 1 to 3 are slow: one every 1 or 2 s, with that burst. A
// key's jobs send it about a request a second between bursts (catch-ups,
// backfills, retries), which only a slow rate holds back: then the rate
// check has requests the bucket decided, as slow targets give the
// concurrency check. On by default (see the flag).
func (s *seqRun) limitBody() map[string]any {
	rates := 6
	if *modelSlowRates {
		rates = 8
	}
	shape, conc, rate, per := s.rng.IntN(3), 1+s.rng.IntN(3), 3+s.rng.IntN(rates), 1+s.rng.IntN(2)
	if *modelSlowRates {
		if rate -= 2; rate <= 3 {
			per *= rate
		}
	}
	body := map[string]any{}
	if shape != 1 {
		body["max_concurrency"] = conc
	}
	if shape != 0 {
		body["rate"], body["per_seconds"] = rate, per
	}
	return body
}

// declareDelivery declares, before the operations, the sequence's limits
// and calendars (random settings and dates), so that the few
// delivery-control operations among the others PATCH jobs onto them from
// the first.
func (s *seqRun) declareDelivery() {
	s.via = s.rng.IntN(len(s.c.insts))
	for _, key := range modelLimitKeys {
		s.putLimit(key, s.limitBody())
	}
	for _, name := range modelCalendarNames {
		s.putCalendar(name, s.calendarDates())
	}
}

// putLimit creates or replaces a limit.
func (s *seqRun) putLimit(key string, body map[string]any) {
	var out chronos.Limit
	code, sent, recv, via, err := s.call(http.MethodPut, "/v1/limits/"+key, body, &out)
	desc := fmt.Sprintf("PUT %s %s via %s -> %d", key, compact(body), via, code)
	if err != nil || code != http.StatusOK && code != http.StatusCreated {
		s.violate("api", "limit %s: HTTP %d %v", desc, code, err)
		s.dc.uncertain[key] = true
		s.dc.unknown[key] = append(s.dc.unknown[key], sent)
		s.logOp("limit", desc)
		return
	}
	delete(s.dc.uncertain, key)
	s.dc.limits[key] = append(s.dc.limits[key], limitVersion{sent: sent, recv: recv, exists: true,
		max: out.MaxConcurrency, rate: out.Rate, per: out.PerSeconds})
	s.logOp("limit", desc)
}

// deleteLimit deletes a limit: 204 when no job names it, 409 while one
// does, 404 when there is none.
func (s *seqRun) deleteLimit(key string) {
	named, unsure := false, false
	for _, j := range s.jobs {
		if !j.deleted && j.id != 0 && j.cur().LimitKey == key {
			named = true
		}
		unsure = unsure || j.uncertain && !j.deleted
	}
	code, sent, recv, via, err := s.call(http.MethodDelete, "/v1/limits/"+key, nil, nil)
	desc := fmt.Sprintf("DELETE %s via %s -> %d", key, via, code)
	vs := s.dc.limits[key]
	exists := len(vs) > 0 && vs[len(vs)-1].exists
	want := http.StatusNoContent
	switch {
	case named:
		want = http.StatusConflict
	case !exists:
		want = http.StatusNotFound
	}
	switch {
	case err != nil || code >= 500:
		s.violate("api", "limit %s: HTTP %d %v", desc, code, err)
		s.dc.uncertain[key] = true
		s.dc.unknown[key] = append(s.dc.unknown[key], sent)
	case code == want || unsure || s.dc.uncertain[key]:
		if code == http.StatusNoContent {
			delete(s.dc.uncertain, key)
			s.dc.limits[key] = append(vs, limitVersion{sent: sent, recv: recv})
		}
	default:
		s.violate("api", "limit %s: want HTTP %d (named by a job: %v, declared: %v)", desc, want, named, exists)
	}
	s.logOp("limit", desc)
}

// backfill POSTs a backfill of a cron job over a past range of 2 to 8 s
// (at most 4 s for a slow target), 3 to 25 s ago; sometimes over the
// range of the job's last backfill shifted a little (overlapping it),
// sometimes a dry run.
func (s *seqRun) backfill() {
	back, span := 3+s.rng.IntN(23), 2+s.rng.IntN(7)
	overlap, shift, stretch := s.rng.IntN(100) < 40, s.rng.IntN(5)-2, s.rng.IntN(6)-2
	dry, anyJob, limited := s.rng.IntN(10) == 0, s.rng.IntN(5) == 0, s.rng.IntN(2) == 0
	now := time.Now().Truncate(time.Second).UTC()
	from := now.Add(-time.Duration(back) * time.Second)
	to := from.Add(time.Duration(span) * time.Second)
	// Mostly a job whose plan has occurrences in the range (a window, an
	// exclusion or a calendar may leave it none), half the time one under
	// a limit (a burst the limit spreads).
	fits := func(j *mjob) bool { return j.cur().Cron != "" && (anyJob || j.cur().occurrences(from, to) != nil) }
	var j *mjob
	if limited {
		j = s.pickJob(func(j *mjob) bool { return fits(j) && j.cur().LimitKey != "" })
	}
	if j == nil {
		j = s.pickJob(fits)
	}
	if j == nil {
		j = s.pickJob(func(j *mjob) bool { return j.cur().Cron != "" })
	}
	if j == nil {
		s.logOp("backfill", "no cron job")
		return
	}
	if prev := s.lastBackfill(j); overlap && prev != nil {
		from = prev.from.Add(time.Duration(shift) * time.Second)
		to = prev.to.Add(time.Duration(stretch) * time.Second)
	}
	if j.behave.delay >= time.Second {
		to = instant.Earlier(to, from.Add(4*time.Second))
	}
	if !to.After(from) {
		to = from.Add(time.Second)
	}
	b := &mbackfill{job: j, from: from, to: to, dry: dry}
	body := map[string]any{"from": from.Format(time.RFC3339), "to": to.Format(time.RFC3339), "dry_run": dry}
	code, sent, recv, via, err := s.call(http.MethodPost, fmt.Sprintf("/v1/jobs/%d/backfill", j.id), body, &b.ans)
	b.sent, b.recv = sent, recv
	desc := fmt.Sprintf("%s [%s, %s) dry %v via %s -> %d", j.key, from.Format("15:04:05"), to.Format("15:04:05"), dry, via, code)
	want := http.StatusAccepted
	if dry {
		want = http.StatusOK
	}
	if err != nil || code != want {
		s.violate("api", "backfill %s: %v", desc, err)
		s.logOp("backfill", desc)
		return
	}
	s.dc.backfills = append(s.dc.backfills, b)
	s.logOp("backfill", fmt.Sprintf("%s: %d occurrences, %d created, %d existing", desc, len(b.ans.Occurrences), len(b.ans.Created), len(b.ans.Existing)))
}

// lastBackfill is the job's last backfill that was not a dry run, or nil.
func (s *seqRun) lastBackfill(j *mjob) *mbackfill {
	for i := len(s.dc.backfills) - 1; i >= 0; i-- {
		if b := s.dc.backfills[i]; b.job == j && !b.dry {
			return b
		}
	}
	return nil
}

// calendarOp puts a calendar (calendarDates), or PATCHes a cron job's
// calendars (one or both, policy skip or next_business_day) or clears
// them.
func (s *seqRun) calendarOp() {
	name := modelCalendarNames[s.rng.IntN(len(modelCalendarNames))]
	dates, attach := s.calendarDates(), s.rng.IntN(100) < 50
	both, detach := s.rng.IntN(3) == 0, s.rng.IntN(5) == 0
	policy := []string{"skip", "next_business_day"}[s.rng.IntN(2)]
	if !attach || len(s.dc.cals) == 0 {
		s.putCalendar(name, dates)
		return
	}
	j := s.pickJob(func(j *mjob) bool { return j.cur().Cron != "" })
	if j == nil {
		s.logOp("calendars", "no cron job")
		return
	}
	names := slices.Sorted(maps.Keys(s.dc.cals))
	body := map[string]any{"calendar_policy": policy}
	switch {
	case detach:
		body = map[string]any{"calendars": nil}
	case both:
		body["calendars"] = names
	default:
		body["calendars"] = []string{names[s.rng.IntN(len(names))]}
	}
	if j.cur().EndsAt != nil {
		// An end within a day the calendars take would leave no
		// occurrence, which the API refuses (as for exclude).
		body["ends_at"] = nil
	}
	s.patch("calendars", j, body)
}

// calendarDates are some of yesterday, today and tomorrow (UTC; every
// model zone is within a day of it), and sometimes a date two months
// ahead (never none).
func (s *seqRun) calendarDates() []string {
	mask, far := s.rng.IntN(8), s.rng.IntN(3) == 0
	today := time.Now().UTC()
	var dates []string
	for i := range 3 {
		if mask&(1<<i) != 0 {
			dates = append(dates, today.AddDate(0, 0, i-1).Format(time.DateOnly))
		}
	}
	if far || len(dates) == 0 {
		dates = append(dates, today.AddDate(0, 2, 0).Format(time.DateOnly))
	}
	return dates
}

// putCalendar creates or replaces a calendar; a change of its dates is a
// new version of every job naming it, taking effect within the call (the
// PUT re-plans them in its transaction, by the rule of a PATCH).
func (s *seqRun) putCalendar(name string, dates []string) {
	var out chronos.Calendar
	body := map[string]any{"description": "model", "dates": dates}
	code, sent, recv, via, err := s.call(http.MethodPut, "/v1/calendars/"+name, body, &out)
	desc := fmt.Sprintf("PUT %s %v via %s -> %d", name, dates, via, code)
	if err != nil || code != http.StatusOK && code != http.StatusCreated {
		s.violate("api", "calendar %s: %v", desc, err)
		// Unknown whether the dates changed: the jobs naming it are
		// left out of the schedule checks.
		for _, j := range s.jobs {
			if slices.Contains(j.cur().calNames(), name) {
				j.uncertain = true
			}
		}
		s.logOp("calendar", desc)
		return
	}
	s.dc.cals[name] = dates
	var jobs []string
	for _, j := range s.jobs {
		if j.deleted || j.id == 0 || !slices.Contains(j.cur().calNames(), name) {
			continue
		}
		st := j.cur()
		s.withCalendars(&st, st.calNames())
		j.versions = append(j.versions, version{sent: sent, recv: recv, st: st})
		jobs = append(jobs, j.key)
	}
	s.logOp("calendar", fmt.Sprintf("%s; re-plans %v", desc, jobs))
}

// stateOf is the state of a job as the API answered it, with the dates
// of its calendars as the model last put them.
func (s *seqRun) stateOf(j *chronos.Job) jobState {
	st := stateOf(j)
	s.withCalendars(&st, j.Calendars)
	return st
}

// withCalendars sets the state's calendars to those named, with their
// dates as last put.
func (s *seqRun) withCalendars(st *jobState, names []string) {
	st.Cals, st.CalDesc = nil, ""
	var desc []string
	for _, n := range names {
		st.Cals = append(st.Cals, chronos.NewCalendarDays(n, s.dc.cals[n]))
		desc = append(desc, fmt.Sprintf("%s%v", n, s.dc.cals[n]))
	}
	st.CalDesc = strings.Join(desc, ",")
}

// calNames are the names of the state's calendars.
func (st jobState) calNames() []string {
	out := make([]string, len(st.Cals))
	for i, c := range st.Cals {
		out[i] = c.Name
	}
	return out
}
