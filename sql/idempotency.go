package sql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Idempotency keys: the first response to an Idempotency-Key, per API key
// name, replayed for IdempotencyTTL.
//
// A key and its answer are stored in the transaction of the write they
// guard (WithIdempotency): the key is taken at the start of that
// transaction and its answer written before its commit, so either both
// the write and its answer are stored or neither is. A crash at any point
// leaves no key "in progress" that a later retry could take over and run
// a second time. A concurrent request with the same key waits for the
// first one's transaction (the key's row lock) and then replays its
// answer.
const (
	// IdempotencyTTL is how long a key's first response is replayed.
	IdempotencyTTL = 24 * time.Hour
	// idempotencyAbandoned is when a key still marked in progress is
	// taken over. Only binaries before keys moved into the write's
	// transaction committed such rows (status 0); they are honoured for a
	// rolling upgrade.
	idempotencyAbandoned = 5 * time.Minute
)

// IdempotentResponse is a stored first response.
type IdempotentResponse struct {
	Fingerprint []byte
	Status      int // 0: an older binary's request still in progress
	ContentType string
	Location    string
	Body        []byte
}

// Idempotency is the Idempotency-Key of a request, carried in its context
// (WithIdempotency) to the write it guards, which stores the key and the
// answer in its own transaction.
type Idempotency struct {
	KeyName     string // the API key's name: keys are scoped per caller
	Key         string
	Fingerprint []byte // of the request: the same key with another request is refused
	// Answer renders the response to store from the write's results (as
	// each write documents them), inside the write's transaction: an
	// error rolls the write back. nil: the write stores no answer.
	Answer func(results ...any) (IdempotentResponse, error)

	stored *IdempotentResponse
}

// Stored is the answer the guarded write stored with its commit, or nil
// when none was (no guarded write ran, or it failed and rolled back).
func (g *Idempotency) Stored() *IdempotentResponse { return g.stored }

type idempotencyCtxKey struct{}

// WithIdempotency returns ctx carrying g to the write it guards.
func WithIdempotency(ctx context.Context, g *Idempotency) context.Context {
	return context.WithValue(ctx, idempotencyCtxKey{}, g)
}

// idempotencyFrom is the key ctx carries, or nil.
func idempotencyFrom(ctx context.Context) *Idempotency {
	g, _ := ctx.Value(idempotencyCtxKey{}).(*Idempotency)
	return g
}

// IdempotencyTakenError is what a guarded write returns, having written
// nothing, when another request holds its key (within IdempotencyTTL):
// its stored answer, to replay or, when the fingerprint differs, refuse.
type IdempotencyTakenError struct {
	Previous IdempotentResponse
}

func (e *IdempotencyTakenError) Error() string {
	return fmt.Sprintf("idempotency key taken (stored status %d)", e.Previous.Status)
}

// guarded runs write on a transaction that also takes and answers ctx's
// Idempotency-Key, if it carries one. Without a key, write runs on the
// pool (one statement, no transaction round trips) unless needTx. write
// returns the results that the key's Answer renders.
func (db *DB) guarded(ctx context.Context, needTx bool, write func(q querier) ([]any, error)) error {
	g := idempotencyFrom(ctx)
	if g == nil && !needTx {
		_, err := write(db.Pool)
		return err
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := takeIdempotencyKey(ctx, tx, g); err != nil {
		return err
	}
	results, err := write(tx)
	if err != nil {
		return err
	}
	answer, err := answerIdempotencyKey(ctx, tx, g, results...)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if g != nil {
		g.stored = answer
	}
	return nil
}

// takeIdempotencyKey takes g's key in tx, the transaction of the write it
// guards (a no-op for a nil g). When another request holds the key it
// returns *IdempotencyTakenError; a key past IdempotencyTTL, or an older
// binary's abandoned one, is taken over. While another transaction is
// taking the same key, it waits for that one to end.
func takeIdempotencyKey(ctx context.Context, tx pgx.Tx, g *Idempotency) error {
	if g == nil {
		return nil
	}
	for range 3 {
		tag, err := tx.Exec(ctx, `
			INSERT INTO idempotency_keys (key_name, key, fingerprint) VALUES ($1, $2, $3)
			ON CONFLICT (key_name, key) DO UPDATE
			   SET fingerprint = excluded.fingerprint, status = 0, content_type = '', location = '', body = '', created_at = now()
			 WHERE idempotency_keys.created_at < now() - $4::bigint * interval '1 microsecond'
			    OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < now() - $5::bigint * interval '1 microsecond')`,
			g.KeyName, g.Key, g.Fingerprint, micros(IdempotencyTTL), micros(idempotencyAbandoned))
		if err != nil {
			return mapErr(err, "take idempotency key")
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		prev, err := readIdempotencyKey(ctx, tx, g.KeyName, g.Key)
		if err != nil {
			return err
		}
		if prev == nil {
			continue // pruned in between: try again
		}
		return &IdempotencyTakenError{Previous: *prev}
	}
	return errors.New("take idempotency key: the key keeps changing hands")
}

// answerIdempotencyKey stores g's answer to the results in tx, before
// the write's commit.
func answerIdempotencyKey(ctx context.Context, tx pgx.Tx, g *Idempotency, results ...any) (*IdempotentResponse, error) {
	if g == nil || g.Answer == nil {
		return nil, nil
	}
	r, err := g.Answer(results...)
	if err != nil {
		return nil, fmt.Errorf("render the idempotent answer: %w", err)
	}
	_, err = tx.Exec(ctx, `
		UPDATE idempotency_keys SET status = $3, content_type = $4, location = $5, body = $6
		 WHERE key_name = $1 AND key = $2`, g.KeyName, g.Key, r.Status, r.ContentType, r.Location, r.Body)
	if err != nil {
		return nil, mapErr(err, "store idempotent response")
	}
	r.Fingerprint = g.Fingerprint
	return &r, nil
}

// readIdempotencyKey reads a stored key, or nil.
func readIdempotencyKey(ctx context.Context, q querier, keyName, key string) (*IdempotentResponse, error) {
	return scanIdempotencyKey(q.QueryRow(ctx, `
		SELECT fingerprint, status, content_type, location, body FROM idempotency_keys
		 WHERE key_name = $1 AND key = $2`, keyName, key))
}

// scanIdempotencyKey reads a stored key's row (fingerprint, status,
// content_type, location, body), or nil when there is none.
func scanIdempotencyKey(row pgx.Row) (*IdempotentResponse, error) {
	var r IdempotentResponse
	err := row.Scan(&r.Fingerprint, &r.Status, &r.ContentType, &r.Location, &r.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err, "read idempotency key")
	}
	return &r, nil
}

// IdempotencyKey returns what is stored under (keyName, key) and still
// in force: a finished response to replay, or an older binary's request
// in progress (Status 0), or nil when the key is free (never used,
// expired, or abandoned).
func (db *DB) IdempotencyKey(ctx context.Context, keyName, key string) (*IdempotentResponse, error) {
	return scanIdempotencyKey(db.Pool.QueryRow(ctx, `
		SELECT fingerprint, status, content_type, location, body FROM idempotency_keys
		 WHERE key_name = $1 AND key = $2
		   AND created_at >= now() - $3::bigint * interval '1 microsecond'
		   AND (status <> 0 OR created_at >= now() - $4::bigint * interval '1 microsecond')`,
		keyName, key, micros(IdempotencyTTL), micros(idempotencyAbandoned)))
}

// StoreIdempotentResponse stores the answer of a request under its key
// when no write stored it: a refusal (4xx) that wrote nothing, so storing
// it apart from any write loses nothing. A key that is taken in the
// meantime (within its TTL) is left as it is; it reports whether r was
// stored.
func (db *DB) StoreIdempotentResponse(ctx context.Context, keyName, key string, r IdempotentResponse) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `
		INSERT INTO idempotency_keys (key_name, key, fingerprint, status, content_type, location, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (key_name, key) DO UPDATE
		   SET fingerprint = excluded.fingerprint, status = excluded.status, content_type = excluded.content_type,
		       location = excluded.location, body = excluded.body, created_at = now()
		 WHERE idempotency_keys.created_at < now() - $8::bigint * interval '1 microsecond'
		    OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < now() - $9::bigint * interval '1 microsecond')`,
		keyName, key, r.Fingerprint, r.Status, r.ContentType, r.Location, r.Body, micros(IdempotencyTTL), micros(idempotencyAbandoned))
	if err != nil {
		return false, mapErr(err, "store idempotent response")
	}
	return tag.RowsAffected() == 1, nil
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
