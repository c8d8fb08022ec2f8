package sql

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A deadlock or a serialization failure, wrapped as mapErr wraps it, is
// run again, txAttempts times at most; any other error is returned at once.
func TestRetryTx(t *testing.T) {
	t.Parallel()
	wrapped := func(code string) error {
		return mapErr(&pgconn.PgError{Code: code, Message: "x"}, "update job")
	}
	for _, tc := range []struct {
		name     string
		fails    int // attempts that fail before one succeeds
		code     string
		wantRuns int
		wantErr  bool
	}{
		{"deadlock then ok", 2, "40P01", 3, false},
		{"serialization then ok", 1, "40001", 2, false},
		{"deadlock every time", 100, "40P01", txAttempts, true},
		{"other error", 100, "23505", 1, true},
	} {
		runs := 0
		v, err := retryTx(context.Background(), func() (int, error) {
			runs++
			if runs <= tc.fails {
				return 0, wrapped(tc.code)
			}
			return 7, nil
		})
		if runs != tc.wantRuns || (err != nil) != tc.wantErr || (err == nil && v != 7) {
			t.Errorf("%s: %d runs, %v, %v; want %d runs, error %v", tc.name, runs, v, err, tc.wantRuns, tc.wantErr)
		}
	}
	runs := 0
	_, err := retryTx(context.Background(), func() (int, error) { runs++; return 0, fmt.Errorf("x: %w", errors.New("plain")) })
	if runs != 1 || err == nil {
		t.Errorf("a plain error: %d runs, %v", runs, err)
	}
}
