package chronos

import (
	"strings"
	"testing"
	"time"
)

// TestDeadRunAlertSummary: the text is one line naming the run, the job,
// the attempts and the last error, with what Slack would read as markup
// (a mention, a link) escaped, and a long error cut.
func TestDeadRunAlertSummary(t *testing.T) {
	t.Parallel()
	errText := "HTTP 500 Internal Server Error"
	code := 500
	a := DeadRunAlert{
		Job: AlertJob{ID: 7, Name: "nightly-report"},
		Run: AlertRun{ID: 42, ScheduledAt: time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC), Trigger: TriggerSchedule,
			AttemptCount: 4, Status: StatusDead, LastError: &errText, LastStatusCode: &code},
	}
	want := `Chronos: run 42 of job "nightly-report" (id 7) is dead after 4 attempts (schedule run of 2026-12-03T02:00:00Z): HTTP 500 Internal Server Error`
	if got := a.Summary(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}

	a.Job.Name = "<!channel> & <https://evil.example|click>"
	a.Run.AttemptCount = 1
	long := "line one\nline two " + strings.Repeat("é", 400)
	a.Run.LastError = &long
	got := a.Summary()
	if strings.ContainsAny(got, "<>\n") || !strings.Contains(got, "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;") ||
		!strings.Contains(got, "after 1 attempt (") || !strings.Contains(got, "line one line two") || !strings.HasSuffix(got, "…") ||
		len(got) > 600 {
		t.Errorf("summary %q", got)
	}

	a.Run.LastError = nil
	if got := a.Summary(); !strings.HasSuffix(got, "): HTTP 500") {
		t.Errorf("summary without an error text: %q", got)
	}
}
