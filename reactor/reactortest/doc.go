// Package reactortest holds the test helpers shared by the reactor's own
// tests (package reactor) and the ticket acceptance tests (tickets/tests):
// a test logger, pools, a counting target, Eventually, jobs and runs, a
// running instance stopped at cleanup, and probes of the leadership lock.
// Each helper exists once, here; the tests may call it by a shorter local
// name.
//
// The package does not import reactor, and that is deliberate. The
// reactor's tests that start a reactor reach into it (one swaps the
// executor's transport), so they stay in package reactor, and Go forbids an
// import cycle: a package they import cannot import reactor. Moving them to
// package reactor_test instead would have taken an export_test.go for those
// internals and a qualifier on every reactor name in them, for the sake of
// one small function. So the caller builds the reactor itself (reactor.New
// with the Config its test wants, its three intervals from Timings) on an
// Instance's pool, bus and logger, and hands its Run to Instance.Go (the
// leadership tests' harnesses, which run a reactor.Leader, likewise stay
// with them); the rest (pool, bus, listener, stopping, triggering) is here.
//
// Like package sqltest, it is an ordinary package so that tests of several
// packages can import it; nothing outside tests should.
package reactortest
