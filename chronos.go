// Package chronos is the domain of the Chronos scheduler: jobs, runs,
// attempts, their statuses and policies, the events the reactor publishes,
// the application errors the HTTP layer maps to status codes, and the pure
// schedule maths (next occurrence, backoff).
//
// It knows nothing of Postgres, HTTP or the bus; every other package of the
// module depends on it and it depends on none of them.
package chronos
