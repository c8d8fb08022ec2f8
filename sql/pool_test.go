package sql_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestAsyncCommitPool: a pool with AsyncCommit runs every statement and
// transaction with synchronous_commit off, set for that statement or
// transaction alone (the session keeps its own setting, so a transaction
// pooler hands nothing on), and its results and errors are pgx's.
func TestAsyncCommitPool(t *testing.T) {
	t.Parallel()
	dsn := pgdsn.WithParam(sqltest.NewURL(t), "synchronous_commit", "on")
	ctx := t.Context()
	for _, pooled := range []bool{false, true} {
		db, err := sql.OpenWith(ctx, dsn, sql.Options{Instance: "async", AsyncCommit: true, Pooled: pooled})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.Pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "off" {
			t.Errorf("pooled=%v: QueryRow sees synchronous_commit=%q (%v), want off", pooled, v, err)
		}
		rows, err := db.Pool.Query(ctx, "SELECT current_setting('synchronous_commit') FROM generate_series(1, 3)")
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(got) != 3 || got[0] != "off" {
			t.Errorf("pooled=%v: Query rows %v (%v), want 3 × off", pooled, got, err)
		}
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "off" {
			t.Errorf("pooled=%v: a transaction sees synchronous_commit=%q (%v), want off", pooled, v, err)
		}
		if err := tx.QueryRow(ctx, "SHOW jit").Scan(&v); err != nil || v != "off" {
			t.Errorf("pooled=%v: a transaction sees jit=%q (%v), want off", pooled, v, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// And no statement of the reactors' pool is compiled by JIT.
		if err := db.Pool.QueryRow(ctx, "SHOW jit").Scan(&v); err != nil || v != "off" {
			t.Errorf("pooled=%v: QueryRow sees jit=%q (%v), want off", pooled, v, err)
		}
		if err := db.Pool.Pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "on" {
			t.Errorf("pooled=%v: the session has synchronous_commit=%q (%v) after async statements, want on", pooled, v, err)
		}
		// Results and errors come through.
		tbl := fmt.Sprintf("async_%v", pooled)
		if _, err := db.Pool.Exec(ctx, "CREATE TABLE "+tbl+" (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		tag, err := db.Pool.Exec(ctx, "INSERT INTO "+tbl+" SELECT generate_series(1, $1::int)", 5)
		if err != nil || tag.RowsAffected() != 5 {
			t.Errorf("pooled=%v: insert: %v, %v", pooled, tag, err)
		}
		var pgErr *pgconn.PgError
		if _, err := db.Pool.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", 1); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
			t.Errorf("pooled=%v: duplicate insert: %v, want a unique violation", pooled, err)
		}
		if err := db.Pool.QueryRow(ctx, "SELECT id::text FROM "+tbl+" WHERE id = $1", 99).Scan(&v); !errors.Is(err, pgx.ErrNoRows) {
			t.Errorf("pooled=%v: no row: %v, want pgx.ErrNoRows", pooled, err)
		}
		rows, err = db.Pool.Query(ctx, "SELECT nonsense FROM "+tbl)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if !errors.As(err, &pgErr) || pgErr.Code != "42703" {
			t.Errorf("pooled=%v: bad query: %v, want an undefined column", pooled, err)
		}
		if st := db.Pool.Stat(); st.AcquiredConns() != 0 {
			t.Errorf("pooled=%v: %d connections still acquired: a batch was not closed", pooled, st.AcquiredConns())
		}
		db.Close()
	}
}

// TestMapArgumentsInEveryMode: what the API passes as arguments (maps of
// labels and headers, signing secrets, excluded dates) encodes in every
// query mode a DSN may choose, the ones a transaction pooler needs
// included.
func TestMapArgumentsInEveryMode(t *testing.T) {
	t.Parallel()
	base := sqltest.NewURL(t)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			db, err := sql.OpenWith(t.Context(), pgdsn.WithParam(base, "default_query_exec_mode", mode), sql.Options{Instance: "modes", Pooled: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			j := cronJob("0 0 1 1 *")
			j.Name = "modes-" + mode
			j.Headers = map[string]string{"X-A": "b"}
			j.Labels = map[string]string{"team": mode}
			created := mustCreate(t, db, j)
			if created.Labels["team"] != mode || created.Headers["X-A"] != "b" {
				t.Errorf("created %+v", created)
			}
		})
	}
}

// BenchmarkAsyncCommit compares the ways the reactor's writes commit
// asynchronously on the hot path (claim + complete, batch 1, 4 workers):
// a session started with synchronous_commit=off (what serve did before,
// refused by PgBouncer), and the setting made per statement in the same
// round trip (sql.Options.AsyncCommit).
//
//	go test -run '^$' -bench AsyncCommit ./sql/
func BenchmarkAsyncCommit(b *testing.B) {
	for _, mode := range []string{"startup-param", "per-statement"} {
		b.Run(mode, func(b *testing.B) {
			dsn := sqltest.NewURL(b)
			ctx := b.Context()
			opts := sql.Options{Instance: "bench"}
			if mode == "startup-param" {
				dsn = pgdsn.WithParam(dsn, "synchronous_commit", "off")
			} else {
				opts.AsyncCommit = true
			}
			db, err := sql.OpenWith(ctx, dsn, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			j := mustCreate(b, db, cronJob("0 0 1 1 *"))
			insertPending(b, db, j.ID, b.N)
			if _, err := db.Pool.Pool.Exec(ctx, "VACUUM ANALYZE job_runs"); err != nil { // not in a batch
				b.Fatal(err)
			}
			var done atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range 4 {
				worker := fmt.Sprintf("bench-%d", w)
				wg.Go(func() {
					for done.Load() < int64(b.N) {
						cs, err := db.Claim(context.Background(), worker, 1, time.Minute)
						if err != nil || len(cs) == 0 {
							return
						}
						now := time.Now()
						if _, err := db.Complete(context.Background(), []sql.Outcome{{Lease: cs[0].Lease(), Success: true, StatusCode: 200,
							StartedAt: now, FinishedAt: now}}); err != nil {
							b.Error(err)
							return
						}
						done.Add(1)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(done.Load())/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

// A pool on a connection of its own runs with JIT off (the API's
// statements too, not only the reactors'); behind a transaction pooler it
// leaves the session alone, and a DSN that sets jit keeps its word.
func TestPoolTurnsJITOff(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		dsn    string
		pooled bool
		want   string // "": the session's own (reset) value
	}{
		{"direct", dsn, false, "off"},
		{"pooled", dsn, true, ""},
		{"dsn says on", pgdsn.WithParam(dsn, "jit", "on"), false, "on"},
	} {
		db, err := sql.OpenWith(ctx, c.dsn, sql.Options{Instance: "jit", Pooled: c.pooled})
		if err != nil {
			t.Fatal(err)
		}
		var v string
		if c.want == "" {
			// A pooled session is left as the server set it up.
			if err := db.Pool.QueryRow(ctx, "SELECT reset_val FROM pg_settings WHERE name = 'jit'").Scan(&c.want); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Pool.QueryRow(ctx, "SHOW jit").Scan(&v); err != nil || v != c.want {
			t.Errorf("%s: a statement sees jit=%q (%v), want %s", c.name, v, err, c.want)
		}
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SHOW jit").Scan(&v); err != nil || v != c.want {
			t.Errorf("%s: a transaction sees jit=%q (%v), want %s", c.name, v, err, c.want)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}
