package sql

import (
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means the database could not be reached
// or stopped answering (connect failure, a connection lost mid-statement,
// a network timeout, the server shutting down), rather than a bug or a bad
// request: the caller may answer "try again" instead of "internal error".
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	if pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	switch pgCode(err) {
	case "57P01", "57P02", "57P03", "53300": // admin/crash shutdown, cannot connect now, too many connections
		return true
	}
	// A lost connection surfaces from pgx as a plain error on a closed conn.
	var pe *pgconn.PgError
	return !errors.As(err, &pe) && isConnClosed(err)
}

func isConnClosed(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "conn closed" || e.Error() == "closed pool" {
			return true
		}
	}
	return false
}
