package chronos

import "time"

// EventType names what happened. Types are dotted, "<subject>.<verb>", so
// the event tap can filter by prefix.
type EventType string

// Event types. Those marked "cluster" arrive from every instance through
// LISTEN/NOTIFY; the others are published by the local reactor only.
const (
	// EventJobChanged: a job was created, updated or deleted (cluster).
	// Op is "created", "updated" or "deleted". A "created" event carries
	// the new job's NextRunAt when it has one.
	EventJobChanged EventType = "job.changed"
	// EventRunChanged: runs changed status (cluster). RunID is set for a
	// single run; Count for a batch, with AvailableAt the earliest
	// available_at among the pending ones.
	EventRunChanged EventType = "run.changed"
	// EventResync: the listener (re)connected; anything may have changed
	// while it was away.
	EventResync EventType = "listener.resync"
	// EventListenerDown: the listener lost its connection.
	EventListenerDown EventType = "listener.down"
	// EventLeaderChanged: an instance gained or lost leadership (cluster
	// for resignations). Leader says whether Instance now leads.
	EventLeaderChanged EventType = "leader.changed"
	// EventClaimed: the dispatcher claimed Count runs.
	EventClaimed EventType = "dispatcher.claimed"
	// EventAttempted: an attempt of RunID finished; Status is the run's
	// new status, StatusCode and Error describe the attempt.
	EventAttempted EventType = "run.attempted"
	// EventLeaseLost: a fenced write was rejected because the lease was
	// reclaimed.
	EventLeaseLost EventType = "run.lease_lost"
	// EventMaterialized: the materializer created Count runs.
	EventMaterialized EventType = "materializer.materialized"
	// EventSkipped: the materializer skipped Count occurrences of JobID,
	// or marked Count of its runs missed; Op is the reason (SkipOverlap,
	// SkipExcluded, SkipMisfire, SkipDeadline).
	EventSkipped EventType = "materializer.skipped"
	// EventCaughtUp: after a gap, the materializer created one catch-up
	// run of JobID for the occurrences missed, at ScheduledAt; Count is how
	// many runs created ahead before the gap it folded into it.
	EventCaughtUp EventType = "materializer.caught_up"
	// EventReclaimed: the reaper reclaimed Count expired leases.
	EventReclaimed EventType = "reaper.reclaimed"
	// EventLocksRepaired: the leader's lock check (sql.SweepRunLocks)
	// repaired Count things about the overlap lock that should never
	// happen; Op says what (LockOrphan, LockMissing, LockStalled,
	// LockAllowed). One event per kind found.
	EventLocksRepaired EventType = "reaper.locks_repaired"
	// EventPruned: the pruner dropped about Count terminal runs (partitions
	// dropped whole count by the planner's estimate of their rows).
	EventPruned EventType = "pruner.pruned"
	// EventDropped: a subscriber lost Count events because it fell behind.
	EventDropped EventType = "bus.dropped"
	// EventDeadAlert: this instance tried to send an alert that RunID of
	// JobID went dead; Op is the outcome (AlertDelivered, AlertRetrying,
	// AlertFailed, AlertExpired), Attempt the attempt at sending it,
	// StatusCode and Error the answer.
	EventDeadAlert EventType = "alert.dead_run"
	// EventLimitChanged: a limit was put or deleted through this
	// instance's API; Op is "put" or "deleted", Key the limit's key.
	EventLimitChanged EventType = "limit.changed"
	// EventLimitReleased: the leader released Count runs held for their
	// limits, which a refilled rate bucket or a freed slot let start.
	EventLimitReleased EventType = "limit.released"
	// EventCalendarChanged: a calendar was put or deleted through this
	// instance's API; Op is "put" or "deleted", Key the calendar's name.
	// A put that changed the dates of a calendar in use has re-planned
	// its jobs' runs created ahead in the same transaction.
	EventCalendarChanged EventType = "calendar.changed"
	// EventHostDeferred: Origin answered 429 or 503 with Retry-After; its
	// pending runs wait until Until (Count of them moved besides RunID,
	// the run that got the answer), without counting an attempt.
	EventHostDeferred EventType = "host.deferred"
	// EventHostBreakerOpened: Origin's circuit breaker opened (or
	// reopened after its probe failed) after Count consecutive failures;
	// its runs wait, and one probe goes at Until.
	EventHostBreakerOpened EventType = "host.breaker_opened"
	// EventHostBreakerClosed: Origin answered again (its probe, or a run
	// in flight); its breaker closed and its runs go.
	EventHostBreakerClosed EventType = "host.breaker_closed"
)

// Outcomes of a dead-run alert (Event.Op of EventDeadAlert), each a label
// value of chronos_dead_alerts_total.
const (
	// AlertDelivered: the destination answered 2xx.
	AlertDelivered = "delivered"
	// AlertRetrying: an attempt failed; the alert is sent again later.
	AlertRetrying = "retrying"
	// AlertFailed: the last attempt failed; the alert is given up (and
	// logged), never reported by another alert.
	AlertFailed = "failed"
	// AlertExpired: the alert was dropped unsent because its run died too
	// long ago (no instance could send it in time, e.g. none has
	// DEAD_LETTER_WEBHOOK).
	AlertExpired = "expired"
)

// AlertOutcomes are the outcomes of EventDeadAlert.
var AlertOutcomes = []string{AlertDelivered, AlertRetrying, AlertFailed, AlertExpired}

// What the lock check repaired (Event.Op of EventLocksRepaired), each a
// label value of chronos_run_lock_repairs_total.
const (
	// LockOrphan: a job_run_locks row whose run was no longer active.
	LockOrphan = "orphan"
	// LockMissing: an active run of a skip/queue_one job without one.
	LockMissing = "missing"
	// LockStalled: held runs of a job that waited behind nothing.
	LockStalled = "stalled"
	// LockAllowed: held runs of a job that allows overlap.
	LockAllowed = "allowed"
)

// LockRepairKinds are the kinds of EventLocksRepaired.
var LockRepairKinds = []string{LockOrphan, LockMissing, LockStalled, LockAllowed}

// Reasons an occurrence is skipped (Event.Op of EventSkipped).
const (
	// SkipOverlap: the job's overlap policy (skip, queue_one) held the
	// occurrence back while another run was active or waiting.
	SkipOverlap = "overlap"
	// SkipExcluded: the occurrence fell in one of the job's exclude date
	// ranges.
	SkipExcluded = "excluded"
	// SkipMisfire: missed in a gap (the cluster was down or had no
	// leader) and not run, by the job's misfire policy (none; or all,
	// past its MaxMisfireRuns latest).
	SkipMisfire = "misfire"
	// SkipDeadline: the occurrence could not start within the job's
	// starting_deadline_seconds; a run created for it is "missed".
	SkipDeadline = "deadline"
	// SkipCalendar: the occurrence fell on a date of one of the job's
	// calendars, under calendar_policy skip.
	SkipCalendar = "calendar"
)

// SkipReasons are the reasons of EventSkipped, each a label value of
// chronos_occurrences_skipped_total.
var SkipReasons = []string{SkipOverlap, SkipExcluded, SkipMisfire, SkipDeadline, SkipCalendar}

// Event is what travels on the bus and out of the event tap. Fields that do
// not apply to a type are zero and omitted on the wire.
type Event struct {
	Type        EventType  `json:"type"`
	Time        time.Time  `json:"time"`
	Instance    string     `json:"instance,omitempty"` // the instance that caused it, when known
	Op          string     `json:"op,omitempty"`
	JobID       int64      `json:"job_id,omitempty"`
	RunID       int64      `json:"run_id,omitempty"`
	Status      RunStatus  `json:"status,omitempty"`
	Attempt     int        `json:"attempt,omitempty"`
	AvailableAt *time.Time `json:"available_at,omitempty"`
	Count       int        `json:"count,omitempty"`
	StatusCode  int        `json:"status_code,omitempty"`
	Error       string     `json:"error,omitempty"`
	Leader      bool       `json:"leader,omitempty"`
	DurationMS  float64    `json:"duration_ms,omitempty"`
	Trigger     Trigger    `json:"trigger,omitempty"`
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"` // of the run, for schedule lag
	StartedAt   *time.Time `json:"started_at,omitempty"`   // of the attempt
	CreatedAt   *time.Time `json:"created_at,omitempty"`   // of the run, for trigger-to-start latency
	Key         string     `json:"key,omitempty"`          // a limit's key, a calendar's name (EventLimitChanged, EventCalendarChanged)
	Origin      string     `json:"origin,omitempty"`       // host.* events: scheme://host:port
	Until       *time.Time `json:"until,omitempty"`        // host.* events: end of the deferral or cooldown
	NextRunAt   *time.Time `json:"next_run_at,omitempty"`  // job.changed "created": the job's first next run
}

// WakesDispatcher reports whether e may mean that runs are ready to claim.
func (e Event) WakesDispatcher() bool {
	switch e.Type {
	case EventResync, EventMaterialized, EventReclaimed:
		return true
	case EventRunChanged:
		return e.Status == "" || e.Status == StatusPending
	}
	return false
}
