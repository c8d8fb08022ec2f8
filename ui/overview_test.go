package ui_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestOverviewCountsTheLastHourAndKeepsUp(t *testing.T) {
	e, c := signedIn(t, writeKey)
	ctx := context.Background()
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "j", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	finish := func(ago time.Duration, status chronos.RunStatus, lag time.Duration) {
		t.Helper()
		if _, err := e.in.DB.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, started_at, finished_at)
			VALUES ($1, now() - $2 * interval '1 microsecond' - $3 * interval '1 microsecond', 'schedule', $4, 1,
			        now() - $2 * interval '1 microsecond', now() - $2 * interval '1 microsecond')`,
			j.ID, ago.Microseconds(), lag.Microseconds(), string(status)); err != nil {
			t.Fatal(err)
		}
	}
	finish(90*time.Minute, chronos.StatusDead, time.Second) // before the hour
	finish(30*time.Minute, chronos.StatusDead, 2500*time.Millisecond)
	finish(5*time.Minute, chronos.StatusSucceeded, 50*time.Millisecond)
	tile := func(body string, status chronos.RunStatus) string {
		i := strings.Index(body, `<span class="st st-`+string(status)+`">`+string(status)+`</span> last hour`)
		j := strings.LastIndex(body[:max(i, 0)], `<span class="n">`)
		if i < 0 || j < 0 {
			return ""
		}
		return body[j+len(`<span class="n">`) : j+strings.Index(body[j:], "</span>")]
	}
	// Cold, then from the settled minutes: the same.
	for range 2 {
		_, body := c.get("/ui/")
		if s, d := tile(body, chronos.StatusSucceeded), tile(body, chronos.StatusDead); s != "1" || d != "1" {
			t.Fatalf("the overview counts %s succeeded and %s dead in the last hour, want 1 and 1", s, d)
		}
		// p50 of 50 ms and 2.5 s is 1.275 s; p99 2.476 s.
		if !strings.Contains(body, `<span class="n">1s / 2s</span>`) {
			t.Errorf("the overview's lag tile is not 1s / 2s")
		}
		if strings.Count(body, `<rect class="ok"`) != 61 {
			t.Errorf("the chart has %d bars, want 61 (a minute each)", strings.Count(body, `<rect class="ok"`))
		}
	}
	// A run that finishes now shows at once.
	finish(0, chronos.StatusSucceeded, time.Millisecond)
	if _, body := c.get("/ui/"); tile(body, chronos.StatusSucceeded) != "2" {
		t.Errorf("a run that just finished is not counted: %s succeeded", tile(body, chronos.StatusSucceeded))
	}
}

// TestOverviewShowsVersions: the overview's cluster list shows each
// instance's registered version beside its name.
func TestOverviewShowsVersions(t *testing.T) {
	e, c := signedIn(t, writeKey)
	ctx := t.Context()
	pcfg, err := pgxpool.ParseConfig(e.in.DB.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg := pcfg.ConnConfig
	cfg.RuntimeParams["application_name"] = "node-v-listener" // how instances are found
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := e.in.DB.RegisterInstance(ctx, "node-v", "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	if _, body := c.get("/ui/"); !strings.Contains(body, "<li>node-v · v1.2.3</li>") {
		t.Errorf("the overview does not show node-v's version:\n%s", body)
	}
}

// TestOverviewChartHasATimeAxis: the chart of the last hour labels its
// time axis every ten minutes.
func TestOverviewChartHasATimeAxis(t *testing.T) {
	_, c := signedIn(t, readKey)
	_, body := c.get("/ui/")
	if n := len(axisLabelRE.FindAllString(body, -1)); n < 5 || n > 7 {
		t.Errorf("the overview chart has %d time labels, want one every ten minutes of the hour:\n%s", n, body)
	}
}

// axisLabelRE matches a time label of the overview chart's axis.
var axisLabelRE = regexp.MustCompile(`<text x="[0-9.]+%" y="\d+" text-anchor="(start|middle|end)">\d\d:\d0</text>`)
