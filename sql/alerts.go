package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
)

// DeadAlert is one alert of the dead_alerts outbox (migration 010), as a
// claim hands it to the instance that sends it: a run went dead, and URL
// (the job's on_dead_url then) or, when URL is "", the cluster's
// DEAD_LETTER_WEBHOOK is to hear of it.
type DeadAlert struct {
	ID       int64
	Worker   string // the claiming instance: the fence of every write below
	Attempts int    // claims so far, this one included
	URL      string // "": the cluster's DEAD_LETTER_WEBHOOK
	// Alert is the job and the run as they were when the run died; Text
	// and Type are the sender's to fill.
	Alert chronos.DeadRunAlert
	// SigningSecrets are the job's own secrets now (nil: the job has none,
	// or is gone), for an alert to URL; CreatedAt is when the run died.
	SigningSecrets []chronos.SigningSecret
	CreatedAt      time.Time
}

// AlertClaim is the outcome of one ClaimAlerts call.
type AlertClaim struct {
	Alerts []*DeadAlert
	// Next is the earliest time a row this claimer may take becomes
	// available (a retry, or another instance's lease running out); nil
	// when there is none.
	Next *time.Time
}

// claimAlertsSQL claims due alerts of the job kind and, when $4, of the
// cluster kind, each through its partial index, FOR UPDATE SKIP LOCKED so
// instances take disjoint rows. Claiming counts the attempt and leases
// the row by moving available_at to the lease's end: a claimer that dies
// leaves a row that simply becomes due again. The same statement reports
// the earliest later available_at (read before the claim, so the rows it
// claims are not among them), so the caller can arm one timer.
const claimAlertsSQL = `
	WITH j AS (
		SELECT id FROM dead_alerts
		 WHERE url IS NOT NULL AND available_at <= now()
		 ORDER BY available_at, id LIMIT $2
		   FOR UPDATE SKIP LOCKED
	), c AS (
		SELECT id FROM dead_alerts
		 WHERE $4 AND url IS NULL AND available_at <= now()
		 ORDER BY available_at, id LIMIT $2
		   FOR UPDATE SKIP LOCKED
	), claimed AS (
		UPDATE dead_alerts a
		   SET attempts = a.attempts + 1, leased_by = $1, available_at = now() + $3 * interval '1 microsecond'
		 WHERE a.id IN (SELECT id FROM j UNION ALL SELECT id FROM c)
		RETURNING a.id, a.attempts, a.url, a.event, a.created_at, a.job_id
	), later AS (
		SELECT least(
		         (SELECT min(available_at) FROM dead_alerts WHERE url IS NOT NULL AND available_at > now()),
		         (SELECT min(available_at) FROM dead_alerts WHERE $4 AND url IS NULL AND available_at > now())) AS next
	)
	SELECT c.id, c.attempts, c.url, c.event, c.created_at, s.signing_secrets, later.next
	  FROM later LEFT JOIN claimed c ON true
	  LEFT JOIN jobs s ON s.id = c.job_id AND c.url IS NOT NULL
	 ORDER BY c.id`

// ClaimAlerts claims up to limit due alerts for worker, leased for lease:
// those of jobs' on_dead_url always, those of the cluster's webhook only
// when withCluster (an instance without DEAD_LETTER_WEBHOOK leaves them to
// one that has it). Each claim counts an attempt.
func (db *DB) ClaimAlerts(ctx context.Context, worker string, limit int, lease time.Duration, withCluster bool) (AlertClaim, error) {
	var out AlertClaim
	rows, err := db.Pool.Query(ctx, claimAlertsSQL, worker, limit, micros(lease), withCluster)
	if err != nil {
		return out, mapErr(err, "claim dead-run alerts")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id       *int64
			attempts *int
			url      *string
			event    []byte
			created  *time.Time
			secrets  []storedSecret
			next     *time.Time
		)
		if err := rows.Scan(&id, &attempts, &url, &event, &created, &secrets, &next); err != nil {
			return out, mapErr(err, "claim dead-run alerts")
		}
		out.Next = next
		utcPtr(&out.Next)
		if id == nil {
			continue // nothing claimed: the row only carries next
		}
		a := &DeadAlert{ID: *id, Worker: worker, Attempts: *attempts, CreatedAt: created.UTC()}
		if url != nil {
			a.URL = *url
		}
		if len(secrets) > 0 {
			a.SigningSecrets = fromStored(secrets)
		}
		if err := json.Unmarshal(event, &a.Alert); err != nil {
			return out, fmt.Errorf("claim dead-run alerts: alert %d: decode its event: %w", a.ID, err)
		}
		normAlert(&a.Alert)
		out.Alerts = append(out.Alerts, a)
	}
	if err := rows.Err(); err != nil {
		return out, mapErr(err, "claim dead-run alerts")
	}
	return out, nil
}

// normAlert puts an alert's times in UTC and its labels never nil.
func normAlert(a *chronos.DeadRunAlert) {
	a.Run.ScheduledAt = a.Run.ScheduledAt.UTC()
	utcPtr(&a.Run.FinishedAt)
	if a.Job.Labels == nil {
		a.Job.Labels = map[string]string{}
	}
}

// fence is the WHERE clause of every write on a claimed alert: the
// claimer's own lease of that attempt. Another instance that claimed the
// row after this one's lease ran out owns it now.
const alertFence = `id = $1 AND leased_by = $2 AND attempts = $3`

// AlertSent deletes a delivered alert. It reports false when the lease was
// lost (another instance owns the row now).
func (db *DB) AlertSent(ctx context.Context, a *DeadAlert) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM dead_alerts WHERE `+alertFence, a.ID, a.Worker, a.Attempts)
	if err != nil {
		return false, mapErr(err, fmt.Sprintf("delete sent alert %d", a.ID))
	}
	return tag.RowsAffected() == 1, nil
}

// AlertFailed records a failed attempt and makes the alert due again
// after delay. It returns when (on the database's clock), or nil when the
// lease was lost (another instance owns the row now).
func (db *DB) AlertFailed(ctx context.Context, a *DeadAlert, statusCode int, errText string, delay time.Duration) (*time.Time, error) {
	var at time.Time
	err := db.Pool.QueryRow(ctx, `
		UPDATE dead_alerts
		   SET available_at = now() + $4 * interval '1 microsecond', leased_by = NULL,
		       last_status_code = $5, last_error = $6
		 WHERE `+alertFence+`
		RETURNING available_at`, a.ID, a.Worker, a.Attempts, micros(max(delay, 0)), nonZero(int32(statusCode)),
		nonEmpty(storable(errText, maxErrorBytes))).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("record failed alert %d", a.ID))
	}
	at = at.UTC()
	return &at, nil
}

// AlertGivenUp deletes an alert whose attempts are spent: it is not sent
// again, and nothing alerts about it. It reports false when the lease was
// lost.
func (db *DB) AlertGivenUp(ctx context.Context, a *DeadAlert) (bool, error) {
	return db.AlertSent(ctx, a)
}

// ReleaseAlert hands a claimed alert back, due now and its attempt
// uncounted: for an instance that stops before it could send it.
func (db *DB) ReleaseAlert(ctx context.Context, a *DeadAlert) error {
	_, err := db.Pool.Exec(ctx, `
		UPDATE dead_alerts SET available_at = now(), leased_by = NULL, attempts = attempts - 1
		 WHERE `+alertFence, a.ID, a.Worker, a.Attempts)
	return mapErr(err, fmt.Sprintf("release alert %d", a.ID))
}

// AlertSenderSeen records that instance sends the cluster's alerts (it has
// DEAD_LETTER_WEBHOOK): while such an instance was seen in the last five
// minutes, runs that die get a cluster alert (migration 010). Rows of
// instances not seen for a day are deleted on the way.
func (db *DB) AlertSenderSeen(ctx context.Context, instance string) error {
	_, err := db.Pool.Exec(ctx, `
		WITH gone AS (DELETE FROM dead_alert_senders WHERE seen_at < now() - interval '1 day')
		INSERT INTO dead_alert_senders (instance) VALUES ($1)
		ON CONFLICT (instance) DO UPDATE SET seen_at = now()`, instance)
	return mapErr(err, "record cluster alert sender")
}

// ExpiredAlert is an alert dropped by ExpireAlerts.
type ExpiredAlert struct {
	ID, RunID, JobID int64
	Cluster          bool // for DEAD_LETTER_WEBHOOK
	Attempts         int
	LastError        *string
}

// ExpireAlerts deletes up to limit alerts created more than maxAge ago and
// not leased now: their run died too long ago for the alert to help (the
// cluster, or every instance with DEAD_LETTER_WEBHOOK, was down longer
// than the retries last).
func (db *DB) ExpireAlerts(ctx context.Context, maxAge time.Duration, limit int) ([]ExpiredAlert, error) {
	rows, err := db.Pool.Query(ctx, `
		DELETE FROM dead_alerts
		 WHERE id IN (SELECT id FROM dead_alerts
		               WHERE created_at < now() - $1 * interval '1 microsecond'
		                 AND (leased_by IS NULL OR available_at <= now())
		               ORDER BY created_at LIMIT $2
		                 FOR UPDATE SKIP LOCKED)
		RETURNING id, run_id, job_id, url IS NULL, attempts, last_error`, micros(maxAge), limit)
	return collect(rows, err, "expire dead-run alerts", func(r scanner) (ExpiredAlert, error) {
		var e ExpiredAlert
		err := r.Scan(&e.ID, &e.RunID, &e.JobID, &e.Cluster, &e.Attempts, &e.LastError)
		return e, err
	})
}
