package sql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
)

// storedSecret is a signing secret as the signing_secrets jsonb holds it;
// unlike chronos.SigningSecret it marshals the value.
type storedSecret struct {
	Secret         string     `json:"secret"`
	ClusterDefault bool       `json:"cluster_default,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      *time.Time `json:"expires_at"`
}

func toStored(in []chronos.SigningSecret) []storedSecret {
	out := make([]storedSecret, len(in))
	for i, s := range in {
		out[i] = storedSecret(s)
	}
	return out
}

func fromStored(in []storedSecret) []chronos.SigningSecret {
	out := make([]chronos.SigningSecret, len(in))
	for i, s := range in {
		s.CreatedAt = s.CreatedAt.UTC()
		utcPtr(&s.ExpiresAt)
		out[i] = chronos.SigningSecret(s)
	}
	return out
}

func secretHeadersArg(j *chronos.Job) []string {
	if j.SecretHeaders == nil {
		return []string{}
	}
	return j.SecretHeaders
}

// RotateSigningSecret makes secret the job's current signing secret; the
// secrets current until now sign on for grace (see chronos.Rotate), on
// the database's clock. It returns the job as stored. ENOTFOUND;
// ECONFLICT when too many secrets are still in their grace period.
func (db *DB) RotateSigningSecret(ctx context.Context, id int64, secret string, grace time.Duration) (*chronos.Job, error) {
	return db.updateSigningSecrets(ctx, id, "rotate signing secret", func(old []chronos.SigningSecret, now time.Time) ([]chronos.SigningSecret, error) {
		return chronos.Rotate(old, secret, now, grace)
	})
}

// DeleteSigningSecrets removes the job's own signing secrets at once, so
// its deliveries are signed with the cluster's SIGNING_SECRET again.
// ENOTFOUND.
func (db *DB) DeleteSigningSecrets(ctx context.Context, id int64) (*chronos.Job, error) {
	return db.updateSigningSecrets(ctx, id, "delete signing secrets", func([]chronos.SigningSecret, time.Time) ([]chronos.SigningSecret, error) {
		return nil, nil
	})
}

func (db *DB) updateSigningSecrets(ctx context.Context, id int64, what string,
	change func(old []chronos.SigningSecret, now time.Time) ([]chronos.SigningSecret, error)) (*chronos.Job, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	var stored []storedSecret
	var now time.Time
	err = tx.QueryRow(ctx, "SELECT signing_secrets, now() FROM jobs WHERE id = $1 FOR UPDATE", id).Scan(&stored, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobNotFound(id)
	}
	if err != nil {
		return nil, mapErr(err, what)
	}
	next, err := change(fromStored(stored), now.UTC())
	if err != nil {
		return nil, err
	}
	j, err := scanJob(tx.QueryRow(ctx, `
		UPDATE jobs SET signing_secrets = $2, updated_at = now() WHERE id = $1
		RETURNING `+jobColumns, id, toStored(next)))
	if err != nil {
		return nil, mapErr(err, what)
	}
	if err := attachCalendars(ctx, tx, []*chronos.Job{j}, nil); err != nil {
		return nil, err
	}
	// An update in the audit history: the secrets' metadata before and
	// after (their values never marshal).
	before := *j
	before.SigningSecrets = fromStored(stored)
	if changes := chronos.JobChanges(&before, j); len(changes) > 0 {
		if err := recordAudit(ctx, tx, id, chronos.AuditUpdate, nil, changes); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr(err, what)
	}
	return j, nil
}
