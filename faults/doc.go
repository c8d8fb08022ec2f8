// Package faults is Chronos' fault suite: it builds cmd/chronos, runs real
// instances against a real Postgres through a TCP proxy (sqltest.Proxy),
// breaks things on purpose (kill -9 of the leader and of busy workers,
// database cut and stall, rolling SIGTERM restarts, trigger bursts) and
// checks the scheduler's invariants over the database and the log of
// every delivery a recording target received. It also holds the API load
// test and the fuzzer of list cursors and filters.
//
// It is tests only (this file exists for the package comment). Like
// tickets/, it may import everything and nothing imports it.
//
//	go test ./faults/                  # the default: a few minutes at most
//	go test -short ./faults/           # trimmed durations
//	go test ./faults/ -args -soak      # the full durations of design.md
//	go test ./faults/ -run TestFaults/leader_kill -v
package faults
