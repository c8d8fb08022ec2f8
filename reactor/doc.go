// Package reactor is the engine of a Chronos instance: the dispatcher that
// claims runs the moment the bus says there is work, the pool of workers
// that deliver them over HTTP, and the leader-only loops (materializer,
// reaper, pruner).
//
// # Life cycle
//
// Reactor.Run starts the dispatcher and the Leader. While this instance
// leads, the Leader runs the materializer, the reaper and the pruner. When
// the context ends the dispatcher stops claiming, in-flight deliveries get
// Config.ShutdownTimeout to finish, the ones still running are then
// cancelled and their runs handed back to pending (db.Release: the attempt
// is not counted), the completion batcher is flushed, the Leader resigns,
// and Run returns. A graceful stop leaves no run leased.
//
// # Waking up
//
// The dispatcher wakes on bus events that may mean work (see
// chronos.Event.WakesDispatcher: a run became pending, the materializer
// created runs, the reaper reclaimed some, the listener resynced), on a
// timer for the earliest future available_at it knows of (so scheduled and
// retried runs start on time), when a worker frees a slot after a full
// claim, and on the idle poll (Config.IdlePollInterval), which is only a
// safety net. Each wake claims the free slots in one statement and keeps
// claiming while claims come back full.
//
// Under a backlog of quick deliveries a claim also fills a prefetch queue
// (prefetch.go): as many runs more as the workers finish in 50 ms at their
// recent pace, at most five a worker. A worker that finishes takes the
// next queued run at once, and the dispatcher refills the queue when half
// of that is left, so no worker waits for a claim (one takes 5 to 15 ms
// under a burst) and claims are large: a claim's fixed cost in Postgres
// (its plan started and ended, its triggers, its commit, and the walk
// past the index entries the claims before it left dead) is paid a few
// times a burst's second rather than hundreds. While enough is queued the
// dispatcher makes no claim at all. Queued runs are leased but not in
// flight (InFlight does not count them): one that waited a second, or a
// quarter of the lease, goes back to pending unsent and uncounted, and so
// does every queued run when claiming stops.
//
// # Delivery
//
// Every attempt is one HTTP request with the job's method, headers and
// payload (sent as the body with Content-Type: application/json when the
// job has one), bounded by the job's timeout. Redirects are not followed:
// only a 2xx response is a success; 3xx, 4xx and 5xx responses, timeouts
// and connection errors are failures that retry with the job's backoff.
// On 429 and 503 a Retry-After header (seconds or an HTTP date) sets the
// delay, capped at the job's backoff_max_seconds. The lease is renewed
// every LeaseDuration/3 while the request is in flight; if the lease is
// lost the request is cancelled and nothing is recorded.
//
// A claimed run is leased; it is marked running only once its call has
// been in flight for 20 ms. Quicker calls go from leased straight to their
// outcome, and the attempt's row, start time included, is written with
// the outcome in the completer's batch: one commit per run fewer, on a
// database where each commit waits for a WAL flush. The price is small: a
// worker that dies within those 20 ms leaves its attempt counted (the
// reaper reclaims it) but without a row of its own. Against a target
// slower than that every run is started, so the starts are batched too:
// one db.StartMany for all the workers whose 20 ms passed while the last
// one was written, or within 5 ms of the first of them (starter.go).
//
// Outcomes are written in batches (one db.Complete, one round trip, for
// every outcome queued while the previous batch was written, or arriving
// within a millisecond of it), so a lone outcome is recorded at once.
//
// Outbound connections follow chronos.TargetPolicy: addresses of the IANA
// special-purpose registries are refused unless Config.AllowPrivateTargets
// or Config.AllowedTargetNetworks allow them, and metadata endpoints are
// refused always. The transport resolves a hostname itself, judges every
// address and dials only the allowed ones, by address (transport.go), so
// DNS cannot sneak around the check.
//
// Each request carries these headers:
//
//	User-Agent: chronos (unless the job sets its own)
//	X-Chronos-Run-Id: <run id>
//	X-Chronos-Attempt: <attempt number, 1 for the first>
//	X-Chronos-Scheduled-At: <the run's scheduled instant, RFC 3339 with nanoseconds, UTC>
//
// Delivery is at least once: a target deduplicates on X-Chronos-Run-Id.
//
// # Signatures
//
// Deliveries are signed to the Standard Webhooks convention with the job's
// own secrets (chronos.Job.SigningSecrets, every one still active during a
// rotation) or, for a job without any, Config.SigningSecret:
//
//	webhook-id: run_<run id>            (the same on every attempt of a run)
//	webhook-timestamp: <unix seconds when the request was sent>
//	webhook-signature: v1,<base64(HMAC-SHA256(key, id + "." + timestamp + "." + body))> ...
//	X-Chronos-Timestamp: <the same timestamp>
//
// where key is the base64-decoded part of a whsec_ secret, or the bytes of
// a SIGNING_SECRET not in that form (chronos.SigningKey). Because the id
// and the job's own key are signed, a delivery replayed to another job's
// target fails verification there, and two empty deliveries of one second
// no longer share a signature. Jobs signed with the cluster secret also
// carry the legacy X-Chronos-Signature: v1=<hex(HMAC-SHA256(secret,
// timestamp + "." + body))> for targets written before. See signature.go.
//
// # Dead-run alerts
//
// Every instance runs an alerter (alerter.go) beside the dispatcher: it
// sends the alerts that a run went dead, which the database writes in the
// transaction that kills the run, to the job's on_dead_url and to
// AlertConfig.Webhook (DEAD_LETTER_WEBHOOK), signed like deliveries and
// through the same transport. It wakes when a run of its own dies, when
// another instance's batch of deaths is announced, on resync, when a
// retry it scheduled is due and, while it leads, every
// AlertConfig.PollInterval. See AlertConfig for the guarantees.
package reactor
