// Package client is the typed Go client of the Chronos REST API: one
// method per endpoint, every call taking a context, every failure an
// *Error carrying the API's error code (the "code" of the JSON envelope
// {"error": {"code", "message", "fields"}}), so callers branch on
// chronos.ErrorCode(err) exactly as the server does.
//
// It is written by hand over net/http and imports nothing of Chronos but
// the domain types of the root package. The CLI (cmd/chronos) and the
// project's end-to-end tests use it. Plan and Apply (apply.go) implement
// jobs as code: a file of jobs keyed by name, made true on a server.
package client
