package bench

import (
	"context"
	"fmt"
	nethttp "net/http"
	"sync"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// env is one scenario's world: a database, the local target, the bench's
// own pool on that database, and the instances it started.
type env struct {
	b      *runner
	dsn    string
	dbName string
	admin  string // DSN of the server's maintenance database; "" when the database is not ours
	db     *sql.DB
	target *target
	client *nethttp.Client // the bench's API client (keep-alive)
	insts  []instance
	proxy  *countingProxy // --statements: between the instances and Postgres
}

// newEnv prepares a migrated database (a throwaway one unless
// Config.DatabaseURL is set) and starts the target.
func (b *runner) newEnv(ctx context.Context) (*env, error) {
	e := &env{b: b, client: newAPIClient()}
	if dsn := b.cfg.DatabaseURL; dsn != "" {
		e.dsn = dsn
	} else {
		admin := b.cfg.ServerURL
		name, dsn, err := createDB(ctx, admin)
		if err != nil {
			return nil, err
		}
		e.admin, e.dbName, e.dsn = admin, name, dsn
	}
	if err := sql.Migrate(ctx, e.dsn); err != nil {
		e.close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	db, err := sql.Open(ctx, e.dsn, "chronos-bench")
	if err != nil {
		e.close()
		return nil, err
	}
	e.db = db
	if e.dbName == "" {
		if err := db.Pool.QueryRow(ctx, "SELECT current_database()").Scan(&e.dbName); err != nil {
			e.close()
			return nil, fmt.Errorf("current database: %w", err)
		}
	}
	t, err := startTarget(b.cfg.TargetDelay)
	if err != nil {
		e.close()
		return nil, err
	}
	e.target = t
	return e, nil
}

// close stops the instances and the target, deletes the bench's jobs from
// a database that is not ours, and drops a throwaway one.
func (e *env) close() {
	var wg sync.WaitGroup
	for _, in := range e.insts {
		wg.Go(func() {
			if err := in.stop(); err != nil {
				e.b.progress("stop %s: %v", in.name(), err)
			}
		})
	}
	wg.Wait()
	if e.proxy != nil {
		e.proxy.close()
	}
	if e.target != nil {
		e.target.close()
	}
	e.client.CloseIdleConnections()
	if e.db != nil {
		if e.admin == "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if _, err := e.db.Pool.Exec(ctx, "DELETE FROM jobs WHERE name LIKE 'bench-%'"); err != nil {
				e.b.progress("delete bench jobs: %v", err)
			}
			cancel()
		}
		e.db.Close()
	}
	if e.admin != "" {
		if err := dropDB(e.admin, e.dbName); err != nil {
			e.b.progress("drop database %s: %v", e.dbName, err)
		}
	}
}

// inProcess says whether an instance of this world runs in the bench's
// own process (then the process's CPU and RSS are partly the bench's).
func (e *env) inProcess() bool {
	for _, in := range e.insts {
		if _, ok := in.(*inProcess); ok {
			return true
		}
	}
	return false
}
