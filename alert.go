package chronos

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// AlertTypeRunDead is the type of a dead-run alert (DeadRunAlert.Type).
const AlertTypeRunDead = "run.dead"

// DeadRunAlert is the body of the signed POST sent when a run goes dead:
// to the job's on_dead_url and to the cluster's DEAD_LETTER_WEBHOOK. Job
// and Run are as they were at the moment the run died (a job renamed or
// deleted since does not change an alert on its way). Text is a one-line
// summary, so the URL may be a Slack (or compatible) incoming webhook,
// which shows text and ignores the rest.
type DeadRunAlert struct {
	Type string   `json:"type"` // AlertTypeRunDead
	Text string   `json:"text"`
	Job  AlertJob `json:"job"`
	Run  AlertRun `json:"run"`
}

// AlertJob is the job of a dead-run alert.
type AlertJob struct {
	ID     int64             `json:"id"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// AlertRun is the run of a dead-run alert, with its last error and status
// code (the last attempt's).
type AlertRun struct {
	ID             int64      `json:"id"`
	ScheduledAt    time.Time  `json:"scheduled_at"`
	Trigger        Trigger    `json:"trigger"`
	AttemptCount   int        `json:"attempt_count"`
	Status         RunStatus  `json:"status"`
	LastError      *string    `json:"last_error"`
	LastStatusCode *int       `json:"last_status_code"`
	RedriveOf      *int64     `json:"redrive_of"`
	FinishedAt     *time.Time `json:"finished_at"` // when it went dead
}

// maxAlertErrorText bounds the last error quoted in an alert's text: a
// chat line, not a log.
const maxAlertErrorText = 300

// Summary is the alert's one-line text, e.g.
//
//	Chronos: run 42 of job "nightly-report" (id 7) is dead after 4 attempts (schedule run of 2026-12-03T02:00:00Z): HTTP 500 Internal Server Error
//
// The job name and the error come from users and targets: &, < and > are
// escaped as Slack's message format asks, so neither can turn into a
// link or an @channel mention.
func (a *DeadRunAlert) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chronos: run %d of job %q (id %d) is dead after %d attempt", a.Run.ID, a.Job.Name, a.Job.ID, a.Run.AttemptCount)
	if a.Run.AttemptCount != 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, " (%s run of %s)", a.Run.Trigger, a.Run.ScheduledAt.UTC().Format(time.RFC3339))
	switch {
	case a.Run.LastError != nil && *a.Run.LastError != "":
		b.WriteString(": ")
		b.WriteString(oneLine(*a.Run.LastError, maxAlertErrorText))
	case a.Run.LastStatusCode != nil:
		fmt.Fprintf(&b, ": HTTP %d", *a.Run.LastStatusCode)
	}
	return slackEscape(b.String())
}

// oneLine folds s onto one line and cuts it to at most n bytes, at a rune
// boundary, marking the cut.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// slackEscape escapes the three characters Slack's mrkdwn gives meaning
// to (https://api.slack.com/reference/surfaces/formatting#escaping).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
