package sql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Calendars (migration 024): named sets of dates that cron jobs avoid.
// The jobs a calendar applies to are rows of job_calendars, whose foreign
// keys keep the references: a calendar in use cannot be deleted, and a
// job cannot name one that does not exist.

// calendarColumns are a calendar's columns for scanCalendar.
const calendarColumns = `c.name, c.description,
	ARRAY(SELECT to_char(d, 'YYYY-MM-DD') FROM unnest(c.dates) d ORDER BY d), c.ical, c.created_at, c.updated_at,
	(SELECT count(*) FROM job_calendars jc WHERE jc.calendar = c.name)`

func scanCalendar(row scanner) (*chronos.Calendar, error) {
	var c chronos.Calendar
	if err := row.Scan(&c.Name, &c.Description, &c.Dates, &c.ICal, &c.CreatedAt, &c.UpdatedAt, &c.Jobs); err != nil {
		return nil, err
	}
	if c.Dates == nil {
		c.Dates = []string{}
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return &c, nil
}

func calendarNotFound(name string) error {
	return chronos.Errorf(chronos.ENOTFOUND, "calendar %q not found", name)
}

// datesDigest identifies a set of dates (sorted, distinct): the key of the
// compiled calendars cache.
func datesDigest(dates []string) string {
	h := sha256.Sum256([]byte(strings.Join(dates, ",")))
	return hex.EncodeToString(h[:16])
}

// Calendar returns one calendar, or ENOTFOUND.
func (db *DB) Calendar(ctx context.Context, name string) (*chronos.Calendar, error) {
	c, err := scanCalendar(db.Pool.QueryRow(ctx, "SELECT "+calendarColumns+" FROM calendars c WHERE c.name = $1", name))
	if err != nil {
		return nil, lookupErr(err, calendarNotFound(name), "get calendar")
	}
	return c, nil
}

// Calendars returns every calendar, by name.
func (db *DB) Calendars(ctx context.Context) ([]*chronos.Calendar, error) {
	rows, err := db.Pool.Query(ctx, "SELECT "+calendarColumns+" FROM calendars c ORDER BY c.name")
	return collect(rows, err, "list calendars", scanCalendar)
}

// PutCalendar creates or replaces a calendar (validated: Dates sorted and
// distinct) and reports whether it was created. When the dates of a
// calendar in use change, every enabled cron job naming it is re-planned
// in the same transaction by the rule of a PATCH of its schedule (see
// replanJob): its runs created ahead that the new plan no longer holds
// are deleted, those it holds are kept, and its next_run_at is the new
// plan's; so no occurrence is lost or doubled. A deadlock or
// serialization failure is retried.
func (db *DB) PutCalendar(ctx context.Context, c *chronos.Calendar) (created bool, err error) {
	if err := c.Validate(); err != nil {
		return false, err
	}
	return retryTx(ctx, func() (bool, error) { return db.putCalendar(ctx, c) })
}

func (db *DB) putCalendar(ctx context.Context, c *chronos.Calendar) (bool, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("put calendar: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	digest := datesDigest(c.Dates)
	// The calendar's row first (FOR NO KEY UPDATE: a job naming it takes
	// KEY SHARE through the foreign key, which this does not block), then
	// its jobs, each as a PATCH takes them.
	var (
		oldDigest string
		oldDates  []string
		now       time.Time
	)
	err = tx.QueryRow(ctx, `
		SELECT digest, ARRAY(SELECT to_char(d, 'YYYY-MM-DD') FROM unnest(dates) d), now()
		  FROM calendars WHERE name = $1 FOR NO KEY UPDATE`, c.Name).Scan(&oldDigest, &oldDates, &now)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, mapErr(err, "put calendar")
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO calendars (name, description, dates, ical, digest)
		VALUES ($1, $2, $3::text[]::date[], $4, $5)
		ON CONFLICT (name) DO UPDATE
		   SET description = excluded.description, dates = excluded.dates, ical = excluded.ical,
		       digest = excluded.digest, updated_at = now()
		RETURNING created_at, updated_at`, c.Name, c.Description, c.Dates, c.ICal, digest).
		Scan(&c.CreatedAt, &c.UpdatedAt)
	if err != nil {
		return false, mapErr(err, "put calendar")
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	if exists && oldDigest != digest {
		old := map[string]*chronos.CalendarDays{c.Name: chronos.NewCalendarDays(c.Name, oldDates)}
		if err := replanCalendarJobs(ctx, tx, c.Name, old, now.UTC()); err != nil {
			return false, err
		}
	}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM job_calendars WHERE calendar = $1", c.Name).Scan(&c.Jobs); err != nil {
		return false, mapErr(err, "put calendar")
	}
	if err := tx.Commit(ctx); err != nil {
		return false, mapErr(err, "put calendar")
	}
	return !exists, nil
}

// replanCalendarJobs re-plans the enabled cron jobs naming the calendar
// whose dates changed; old holds it as it was.
func replanCalendarJobs(ctx context.Context, tx pgx.Tx, name string, old map[string]*chronos.CalendarDays, now time.Time) error {
	rows, err := tx.Query(ctx, "SELECT job_id FROM job_calendars WHERE calendar = $1 ORDER BY job_id", name)
	ids, err := collect(rows, err, "put calendar: its jobs", scanOne[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := replanJob(ctx, tx, id, old, now); err != nil {
			return err
		}
	}
	return nil
}

// replanJob re-plans one job after a change of one of its calendars, by
// the rule of a PATCH of its schedule (UpdateJob): the job's row, its
// schedule row, then its runs, locked in that order; the runs created
// ahead that the new plan does not hold are deleted, and next_run_at is
// the new plan's first occurrence after now (or the jittered occurrence
// both plans hold). The materializer's unique key makes a second run of a
// kept occurrence a no-op. old overrides the changed calendar's compiled
// dates for the plan before the change.
func replanJob(ctx context.Context, tx pgx.Tx, id int64, old map[string]*chronos.CalendarDays, now time.Time) error {
	var s jobScan
	err := tx.QueryRow(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = $1 FOR NO KEY UPDATE", id).Scan(s.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return mapErr(err, "put calendar: lock a job")
	}
	var rawNext *time.Time
	err = tx.QueryRow(ctx, "SELECT next_run_at FROM job_schedules WHERE job_id = $1 FOR UPDATE", id).Scan(&rawNext)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return mapErr(err, "put calendar: lock a job's schedule")
	}
	j := s.job()
	if j.CronExpr == nil || !j.Enabled {
		return nil // a paused job plans from scratch when resumed
	}
	if err := attachCalendars(ctx, tx, []*chronos.Job{j}, nil); err != nil {
		return err
	}
	was := *j
	if err := attachCalendars(ctx, tx, []*chronos.Job{&was}, old); err != nil {
		return err
	}
	c := scheduleChange{schedule: true}
	dropped, _, err := dropRunsAhead(ctx, tx, j, c)
	if err != nil {
		return err
	}
	next, err := nextAfterUpdate(&was, j, c, rawNext, dropped, now)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "UPDATE job_schedules SET next_run_at = $2 WHERE job_id = $1", id, next)
	return mapErr(err, "put calendar: re-plan a job")
}

// DeleteCalendar deletes a calendar: ENOTFOUND, or ECONFLICT while a job
// names it (the foreign key of job_calendars decides, so a job created
// meanwhile cannot slip past the check).
func (db *DB) DeleteCalendar(ctx context.Context, name string) error {
	var users []string
	err := db.Pool.QueryRow(ctx, `
		SELECT ARRAY(SELECT j.name FROM job_calendars jc JOIN jobs j ON j.id = jc.job_id
		              WHERE jc.calendar = $1 ORDER BY j.name LIMIT 11)`, name).Scan(&users)
	if err != nil {
		return mapErr(err, "delete calendar")
	}
	if len(users) > 0 {
		return calendarInUse(name, users)
	}
	tag, err := db.Pool.Exec(ctx, "DELETE FROM calendars WHERE name = $1", name)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		return calendarInUse(name, nil)
	}
	if err != nil {
		return mapErr(err, "delete calendar")
	}
	if tag.RowsAffected() == 0 {
		return calendarNotFound(name)
	}
	return nil
}

func calendarInUse(name string, users []string) error {
	msg := fmt.Sprintf("calendar %q is used by jobs", name)
	if len(users) > 10 {
		users = append(users[:10], "...")
	}
	if len(users) > 0 {
		msg += ": " + strings.Join(users, ", ")
	}
	return &chronos.Error{Code: chronos.ECONFLICT, Message: msg + "; remove it from them first"}
}
