package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// ANSI colours of the human-readable output.
const (
	ansiReset   = "\x1b[0m"
	ansiDim     = "\x1b[2m"
	ansiBold    = "\x1b[1m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiBlue    = "\x1b[34m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
)

// paint wraps s in an ANSI colour when colour is on.
func paint(on bool, color, s string) string {
	if !on || color == "" {
		return s
	}
	return color + s + ansiReset
}

// statusColor is the colour of a run status.
func statusColor(s chronos.RunStatus) string {
	switch s {
	case chronos.StatusSucceeded:
		return ansiGreen
	case chronos.StatusDead:
		return ansiRed + ansiBold
	case chronos.StatusMissed:
		return ansiRed
	case chronos.StatusPending:
		return ansiYellow
	case chronos.StatusLeased, chronos.StatusRunning:
		return ansiBlue
	}
	return ""
}

// typeColor is the colour of an event type.
func typeColor(t chronos.EventType) string {
	switch {
	case t == chronos.EventDropped || t == chronos.EventLeaseLost || t == chronos.EventListenerDown:
		return ansiRed
	case strings.HasPrefix(string(t), "leader."):
		return ansiMagenta + ansiBold
	case strings.HasPrefix(string(t), "listener."):
		return ansiYellow
	case strings.HasPrefix(string(t), "job."):
		return ansiCyan
	}
	return ""
}

// formatEvent renders an event as one line:
//
//	14:02:03.120 run.attempted        job=3 run=17 attempt=1 succeeded http=204 12.3ms @chronos-1
func formatEvent(e chronos.Event, color bool) string {
	var b strings.Builder
	b.WriteString(paint(color, ansiDim, e.Time.Local().Format("15:04:05.000")))
	b.WriteByte(' ')
	b.WriteString(paint(color, typeColor(e.Type), fmt.Sprintf("%-25s", e.Type)))
	add := func(s string) {
		b.WriteByte(' ')
		b.WriteString(s)
	}
	if e.JobID != 0 {
		add("job=" + strconv.FormatInt(e.JobID, 10))
	}
	if e.RunID != 0 {
		add("run=" + strconv.FormatInt(e.RunID, 10))
	}
	if e.Attempt != 0 {
		add("attempt=" + strconv.Itoa(e.Attempt))
	}
	if e.Status != "" {
		add(paint(color, statusColor(e.Status), string(e.Status)))
	}
	if e.Op != "" {
		add(e.Op)
	}
	if e.Key != "" {
		add("key=" + e.Key)
	}
	if e.Type == chronos.EventLeaderChanged {
		switch {
		case e.Op == "resigned":
		case e.Leader:
			add(paint(color, ansiMagenta, "now leads"))
		default:
			add(paint(color, ansiMagenta, "stepped down"))
		}
	}
	if e.Count != 0 && !(e.Count == 1 && e.RunID != 0) { // count=1 of a single run says nothing
		add("count=" + strconv.Itoa(e.Count))
	}
	if e.StatusCode != 0 {
		code := strconv.Itoa(e.StatusCode)
		c := ansiRed
		if e.StatusCode >= 200 && e.StatusCode < 300 {
			c = ansiGreen
		}
		add("http=" + paint(color, c, code))
	}
	if e.DurationMS != 0 {
		add(strconv.FormatFloat(e.DurationMS, 'f', 1, 64) + "ms")
	}
	if e.Trigger != "" && e.Trigger != chronos.TriggerSchedule {
		add("trigger=" + string(e.Trigger))
	}
	if e.ScheduledAt != nil && e.Type == chronos.EventAttempted {
		add("scheduled=" + e.ScheduledAt.Local().Format("15:04:05.000"))
	}
	if e.AvailableAt != nil && e.Status == chronos.StatusPending {
		if d := time.Until(*e.AvailableAt); d > time.Millisecond {
			add("due_in=" + d.Round(time.Millisecond).String())
		}
	}
	if e.Error != "" {
		add(paint(color, ansiRed, "error="+strconv.Quote(e.Error)))
	}
	if e.Instance != "" {
		add(paint(color, ansiDim, "@"+e.Instance))
	}
	return b.String()
}
