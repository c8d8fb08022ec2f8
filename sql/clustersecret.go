package sql

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ClusterSecretBytes is the length of a generated cluster secret.
const ClusterSecretBytes = 32

// ClusterSecret returns the cluster's random secret of that name (table
// cluster_secrets), creating it on first use. Every instance sharing the
// database gets the same value: the first insert wins (ON CONFLICT DO
// NOTHING) and every caller reads back the stored row, in a statement of
// its own so that it sees a row a concurrent caller committed meanwhile.
func (db *DB) ClusterSecret(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, ClusterSecretBytes)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("cluster secret %s: %w", name, err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cluster_secrets (name, secret) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
		return nil, mapErr(err, "cluster secret "+name)
	}
	var secret []byte
	err := db.Pool.QueryRow(ctx, `SELECT secret FROM cluster_secrets WHERE name = $1`, name).Scan(&secret)
	if errors.Is(err, pgx.ErrNoRows) {
		// Only a concurrent DELETE of the row gets here.
		return nil, fmt.Errorf("cluster secret %s: deleted while it was created", name)
	}
	if err != nil {
		return nil, mapErr(err, "cluster secret "+name)
	}
	return secret, nil
}
