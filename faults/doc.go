// Package faults is Chronos' fault suite: it builds cmd/chronos, runs real
// instances against a real Postgres through a TCP proxy (sqltest.Proxy),
// breaks things on purpose (kill -9 of the leader and of busy workers,
// database cut and stall, rolling SIGTERM restarts, trigger bursts) and
// checks the scheduler's invariants over the database and the log of
// every delivery a recording target received. It also holds the API load
// test, the fuzzer of list cursors and filters, and the model test
// (TestModel, model_*_test.go): seeded random sequences of user operations
// and cluster events (kill -9 of the leader, SIGTERM restarts, an instance
// with a skewed clock), each on a fresh cluster, ended by a cluster-wide
// SIGTERM stop, then checked: one run per occurrence (except flagged
// catch-ups and documented skips), at most max_retries+1 attempts and
// every request an attempt row, one request in flight per skip or
// queue_one job, nothing leased after a graceful stop, no attempt that
// finishes before it started, and for the scheduling policies (jitter,
// exclusions, starts_at/ends_at, misfire, starting deadlines, and PATCHes
// of each): an edit never loses or doubles an occurrence of the new plan,
// no run of an old plan starts after the edit's answer, misfire "all"
// delivers in order. Invariants whose fixes live on other branches are
// gated by constants in model_policy_check_test.go (issue 22).
//
// It is tests only (this file exists for the package comment). Like
// tickets/, it may import everything and nothing imports it.
//
//	go test ./faults/                          # make test's short sizes: every scenario, shorter windows
//	CHRONOS_LONG_TESTS=1 go test ./faults/     # CI's (.ci/run): normal sizes, plus failover and rolling upgrade
//	go test ./faults/ -args -soak              # the full durations of design.md
//	go test ./faults/ -run TestFaults/leader_kill -v
//	go test ./faults/ -run TestModel -model.duration=10m -timeout 30m
//	go test ./faults/ -run 'TestModel/seq3$' -model.seed=S -model.seq=3   # replay a failure
package faults
