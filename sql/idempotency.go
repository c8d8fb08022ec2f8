package sql

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Idempotency keys: the first response to an Idempotency-Key, per API key
// name, replayed for IdempotencyTTL.
const (
	// IdempotencyTTL is how long a key's first response is replayed.
	IdempotencyTTL = 24 * time.Hour
	// idempotencyAbandoned is when a request still in progress under a key
	// is taken to have died with its instance, so the key is usable again.
	idempotencyAbandoned = 5 * time.Minute
)

// IdempotentResponse is a stored first response.
type IdempotentResponse struct {
	Fingerprint []byte
	Status      int // 0: the first request is still in progress
	ContentType string
	Location    string
	Body        []byte
}

// ClaimIdempotencyKey takes (keyName, key) for a new request with the
// given fingerprint and returns nil, or returns what is stored under it
// within IdempotencyTTL: a finished response to replay, or one in
// progress (Status 0). An expired key, or one whose request was abandoned
// mid-way, is taken over.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, keyName, key string, fingerprint []byte) (*IdempotentResponse, error) {
	for range 3 {
		tag, err := db.Pool.Exec(ctx, `
			INSERT INTO idempotency_keys (key_name, key, fingerprint) VALUES ($1, $2, $3)
			ON CONFLICT (key_name, key) DO UPDATE
			   SET fingerprint = excluded.fingerprint, status = 0, content_type = '', location = '', body = '', created_at = now()
			 WHERE idempotency_keys.created_at < now() - $4::bigint * interval '1 microsecond'
			    OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < now() - $5::bigint * interval '1 microsecond')`,
			keyName, key, fingerprint, micros(IdempotencyTTL), micros(idempotencyAbandoned))
		if err != nil {
			return nil, mapErr(err, "claim idempotency key")
		}
		if tag.RowsAffected() == 1 {
			return nil, nil
		}
		var r IdempotentResponse
		err = db.Pool.QueryRow(ctx, `
			SELECT fingerprint, status, content_type, location, body FROM idempotency_keys
			 WHERE key_name = $1 AND key = $2`, keyName, key).
			Scan(&r.Fingerprint, &r.Status, &r.ContentType, &r.Location, &r.Body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // pruned or abandoned in between: try again
		}
		if err != nil {
			return nil, mapErr(err, "read idempotency key")
		}
		return &r, nil
	}
	return nil, errors.New("claim idempotency key: the key keeps changing hands")
}

// FinishIdempotencyKey stores the response to the request that claimed
// the key.
func (db *DB) FinishIdempotencyKey(ctx context.Context, keyName, key string, r IdempotentResponse) error {
	_, err := db.Pool.Exec(ctx, `
		UPDATE idempotency_keys SET status = $3, content_type = $4, location = $5, body = $6
		 WHERE key_name = $1 AND key = $2`, keyName, key, r.Status, r.ContentType, r.Location, r.Body)
	return mapErr(err, "store idempotent response")
}

// ReleaseIdempotencyKey forgets a key whose request failed in a way worth
// retrying (a 5xx): the retry runs afresh.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, keyName, key string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE key_name = $1 AND key = $2 AND status = 0`, keyName, key)
	return mapErr(err, "release idempotency key")
}

// PruneIdempotencyKeys deletes up to batch keys past IdempotencyTTL.
func (db *DB) PruneIdempotencyKeys(ctx context.Context, batch int) (int, error) {
	tag, err := db.Pool.Exec(ctx, `
		DELETE FROM idempotency_keys WHERE (key_name, key) IN (
			SELECT key_name, key FROM idempotency_keys
			 WHERE created_at < now() - $1::bigint * interval '1 microsecond'
			 ORDER BY created_at LIMIT $2)`, micros(IdempotencyTTL), batch)
	if err != nil {
		return 0, mapErr(err, "prune idempotency keys")
	}
	return int(tag.RowsAffected()), nil
}
