package sql

import (
	"context"
	"sync"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// A job's calendars live in job_calendars, not in a column of jobs: every
// read of a job that builds its schedule (the materializer, the previews,
// an update, a backfill) attaches them with attachCalendars, which also
// compiles the calendars' dates for the schedule maths. Compiled calendars
// are cached by name and digest (the dates' hash), so the materializer
// reads a calendar's dates again only when they changed.

// compiledCalendars caches chronos.CalendarDays by name + "\x00" + digest.
// A change of dates is a new digest, so an entry is never stale; the map
// is cleared when it grows past maxCompiledCalendars.
var (
	compiledMu        sync.Mutex
	compiledCalendars = map[string]*chronos.CalendarDays{}
)

const maxCompiledCalendars = 1000

func compiledKey(name, digest string) string { return name + "\x00" + digest }

// compiled returns the compiled calendars of the given names (by digest
// as read), reading the dates of those not cached.
func compiled(ctx context.Context, q querier, digests map[string]string) (map[string]*chronos.CalendarDays, error) {
	out := make(map[string]*chronos.CalendarDays, len(digests))
	var missing []string
	compiledMu.Lock()
	for name, d := range digests {
		if c, ok := compiledCalendars[compiledKey(name, d)]; ok {
			out[name] = c
		} else {
			missing = append(missing, name)
		}
	}
	compiledMu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT name, digest, ARRAY(SELECT to_char(d, 'YYYY-MM-DD') FROM unnest(dates) d)
		  FROM calendars WHERE name = ANY($1)`, missing)
	if err != nil {
		return nil, mapErr(err, "read calendars")
	}
	var (
		name, digest string
		dates        []string
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &digest, &dates}, func() error {
		c := chronos.NewCalendarDays(name, dates)
		out[name] = c
		compiledMu.Lock()
		if len(compiledCalendars) >= maxCompiledCalendars {
			clear(compiledCalendars)
		}
		compiledCalendars[compiledKey(name, digest)] = c
		compiledMu.Unlock()
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "read calendars")
	}
	return out, nil
}

// attachCalendars reads the stored calendars and calendar_policy of jobs
// and attaches them compiled. override replaces the compiled dates of the
// calendars it names (a calendar as it was before a change).
func attachCalendars(ctx context.Context, q querier, jobs []*chronos.Job, override map[string]*chronos.CalendarDays) error {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]int64, len(jobs))
	byID := make(map[int64][]*chronos.Job, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
		byID[j.ID] = append(byID[j.ID], j)
		j.Calendars, j.CalendarPolicy = []string{}, chronos.CalendarSkip
	}
	rows, err := q.Query(ctx, `
		SELECT jc.job_id, jc.calendar, jc.policy, c.digest
		  FROM job_calendars jc JOIN calendars c ON c.name = jc.calendar
		 WHERE jc.job_id = ANY($1) ORDER BY jc.job_id, jc.position`, ids)
	if err != nil {
		return mapErr(err, "read jobs' calendars")
	}
	var (
		id                   int64
		name, policy, digest string
	)
	digests := map[string]string{}
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &policy, &digest}, func() error {
		for _, j := range byID[id] {
			j.Calendars = append(j.Calendars, name)
			j.CalendarPolicy = chronos.CalendarPolicy(policy)
		}
		digests[name] = digest
		return nil
	})
	if err != nil {
		return mapErr(err, "read jobs' calendars")
	}
	cals, err := compiled(ctx, q, digests)
	if err != nil {
		return err
	}
	for n, c := range override {
		cals[n] = c
	}
	for _, j := range jobs {
		if err := j.ResolveCalendars(cals); err != nil {
			return err // a calendar deleted between the two reads: cannot be (the foreign key)
		}
	}
	return nil
}

// resolveCalendars compiles the calendars that jobs name (a create or an
// update, before they are stored) and attaches them; it returns, by index,
// the EINVALID of each job naming a calendar that does not exist.
func resolveCalendars(ctx context.Context, q querier, jobs []*chronos.Job) (map[int]error, error) {
	var names []string
	for _, j := range jobs {
		if j != nil {
			names = append(names, j.Calendars...)
		}
	}
	errs := map[int]error{}
	if len(names) == 0 {
		return errs, nil
	}
	rows, err := q.Query(ctx, "SELECT name, digest FROM calendars WHERE name = ANY($1)", names)
	if err != nil {
		return nil, mapErr(err, "read calendars")
	}
	digests := map[string]string{}
	var name, digest string
	if _, err := pgx.ForEachRow(rows, []any{&name, &digest}, func() error { digests[name] = digest; return nil }); err != nil {
		return nil, mapErr(err, "read calendars")
	}
	cals, err := compiled(ctx, q, digests)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if j == nil || len(j.Calendars) == 0 {
			continue
		}
		if err := j.ResolveCalendars(cals); err != nil {
			errs[i] = err
		}
	}
	return errs, nil
}

// writeCalendars stores the calendars of jobs (already stored, with ids):
// their rows of job_calendars are replaced. The foreign key takes a key
// share lock on each calendar, so a concurrent delete of one waits, then
// fails (409).
func writeCalendars(ctx context.Context, q querier, jobs []*chronos.Job, replace bool) error {
	var (
		ids, del []int64
		pos      []int32
		names    []string
		policies []string
	)
	for _, j := range jobs {
		if j == nil || j.ID == 0 {
			continue
		}
		del = append(del, j.ID)
		for k, n := range j.Calendars {
			ids, pos, names, policies = append(ids, j.ID), append(pos, int32(k)), append(names, n), append(policies, string(j.CalendarPolicy))
		}
	}
	if replace && len(del) > 0 {
		if _, err := q.Exec(ctx, "DELETE FROM job_calendars WHERE job_id = ANY($1)", del); err != nil {
			return mapErr(err, "store job calendars")
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, `
		INSERT INTO job_calendars (job_id, position, calendar, policy)
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[])`, ids, pos, names, policies)
	if err != nil {
		if chronos.ErrorCode(mapErr(err, "")) == chronos.ENOTFOUND {
			return chronos.InvalidFields(map[string]string{"calendars": "a calendar it names was deleted meanwhile"})
		}
		return mapErr(err, "store job calendars")
	}
	return nil
}

// ResolveCalendars attaches to j, a job that is not stored (a preview),
// the calendars it names; one that does not exist is an EINVALID naming
// calendars.
func (db *DB) ResolveCalendars(ctx context.Context, j *chronos.Job) error {
	errs, err := resolveCalendars(ctx, db.Pool, []*chronos.Job{j})
	if err != nil {
		return err
	}
	return errs[0]
}
