// Package http is Chronos's REST API: gin routes for jobs and runs, API-key
// authentication, the Server-Sent Events tap of the bus, health and
// readiness probes, Prometheus metrics and the OpenAPI document.
//
// Wiring (cmd): build a Server with NewServer, refuse to start when
// Config.Validate fails, serve Handler() from a net/http.Server, and call
// Run(ctx) alongside it: Run feeds the metrics from the bus and, when its
// context ends, closes the open event streams so http.Server.Shutdown is not
// held up by them. NewServer never listens itself.
//
// Decisions a client can rely on:
//
//   - Errors are {"error": {"code", "message", "fields"}}; fields names each
//     offending body field or query parameter. 400 invalid, 401
//     unauthorized, 404 not_found, 409 conflict, 413 too_large; a 500
//     ("internal error") is a bug and is logged with the request id
//     (X-Request-Id, taken from the request when sane, generated otherwise,
//     and always echoed back).
//   - Bodies are strict: unknown fields, duplicate-free exact key names (no
//     case folding), trailing data and wrong types are 400 naming the field.
//   - PATCH is a true partial update: an absent field is untouched, null
//     clears a nullable field (cron_expr, run_at, payload, headers) or
//     restores the default (timezone UTC, method POST) and is a 400 for the
//     others. An empty body or {} changes nothing and returns the job as
//     stored (200), without bumping updated_at.
//   - ?limit= defaults to 50; values above 500 are capped to 500 (not an
//     error); a limit below 1 or not an integer is a 400. Unknown or repeated
//     query parameters are a 400, so a typo never silently widens a filter.
//   - ?enabled= accepts exactly "true" or "false".
package http
