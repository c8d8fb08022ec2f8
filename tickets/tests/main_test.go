// Package tests holds the ticket acceptance tests: one TestTicketNN per
// ticket of tickets/README.md, each driving the real code path against a
// real Postgres (TEST_DATABASE_URL).
package tests

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
