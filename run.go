package chronos

import "time"

// RunStatus is a state of the run state machine:
//
//	pending --claim--> leased --start--> running --2xx--> succeeded
//	pending <--retry / lease expired-- leased|running --exhausted--> dead
//	pending --starting deadline passed--> missed
type RunStatus string

// Run statuses.
const (
	StatusPending   RunStatus = "pending"
	StatusLeased    RunStatus = "leased"
	StatusRunning   RunStatus = "running"
	StatusSucceeded RunStatus = "succeeded"
	StatusDead      RunStatus = "dead"
	// StatusMissed: a scheduled run that could not start within its job's
	// starting_deadline_seconds; it was never attempted.
	StatusMissed RunStatus = "missed"
)

// Valid reports whether s is a known status.
func (s RunStatus) Valid() bool {
	switch s {
	case StatusPending, StatusLeased, StatusRunning, StatusSucceeded, StatusDead, StatusMissed:
		return true
	}
	return false
}

// Active reports whether a run in status s is pending, leased or running.
func (s RunStatus) Active() bool {
	return s == StatusPending || s == StatusLeased || s == StatusRunning
}

// Terminal reports whether a run in status s will never change again (short
// of a redrive).
func (s RunStatus) Terminal() bool {
	return s == StatusSucceeded || s == StatusDead || s == StatusMissed
}

// Trigger says why a run exists.
type Trigger string

// Run triggers.
const (
	TriggerSchedule Trigger = "schedule" // materialized from the job's schedule
	TriggerManual   Trigger = "manual"   // POST /v1/jobs/{id}/trigger
	TriggerRedrive  Trigger = "redrive"  // a dead run sent round again
)

// Run is one execution of a job: one occurrence of its schedule, or one
// manual trigger. It is attempted up to MaxRetries+1 times.
type Run struct {
	ID             int64      `json:"id"`
	JobID          int64      `json:"job_id"`
	ScheduledAt    time.Time  `json:"scheduled_at"`
	Trigger        Trigger    `json:"trigger"`
	CatchUp        bool       `json:"catch_up"`             // stands for occurrences missed while no leader ran
	RedriveOf      *int64     `json:"redrive_of,omitempty"` // the dead run this one redrives
	Status         RunStatus  `json:"status"`
	AttemptCount   int        `json:"attempt_count"`
	AvailableAt    time.Time  `json:"available_at"`
	LeasedBy       *string    `json:"leased_by"`
	LeasedUntil    *time.Time `json:"leased_until"`
	StartedAt      *time.Time `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	LastError      *string    `json:"last_error"`
	LastStatusCode *int       `json:"last_status_code"`
	CreatedAt      time.Time  `json:"created_at"`
	// FireAt is, for a scheduled run, ScheduledAt (the nominal instant)
	// plus the job's jitter: when its first attempt was due.
	FireAt   *time.Time `json:"fire_at,omitempty"`
	Attempts []Attempt  `json:"attempts,omitempty"`
}

// Attempt is the record of one delivery attempt of a run.
type Attempt struct {
	RunID        int64      `json:"run_id"`
	Attempt      int        `json:"attempt"`
	WorkerID     string     `json:"worker_id"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	StatusCode   *int       `json:"status_code"`
	Error        *string    `json:"error"`
	ResponseBody *string    `json:"response_body"`
	DurationMS   *int64     `json:"duration_ms"`
}

// LeaseExpiredError is the last_error of a run reclaimed by the reaper.
const LeaseExpiredError = "lease expired"
