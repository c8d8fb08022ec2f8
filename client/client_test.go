package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
	"github.com/chronoshq/chronos/internal/apiserver"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "client-test-key-4242"

// newServer serves the real API (gin router, auth, sql layer) on a fresh
// database over real HTTP and returns a client of it.
func newServer(t *testing.T) (*client.Client, string) {
	t.Helper()
	return newServerOn(t, sqltest.New(t))
}

// newServerOn is newServer on db, for a test that also writes to it
// directly.
func newServerOn(t *testing.T, db *sql.DB) (*client.Client, string) {
	t.Helper()
	ts := apiserver.Start(t, db, "client-test", testKey)
	c, err := client.New(ts.URL, testKey, client.WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c, ts.URL
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func cronJob(name string) *chronos.JobUpdate {
	return &chronos.JobUpdate{Name: chronos.Some(name), CronExpr: chronos.Some("0 3 * * *"), TargetURL: chronos.Some("http://127.0.0.1:9/hook")}
}

func TestJobsLifecycle(t *testing.T) {
	t.Parallel()
	c, _ := newServer(t)
	ctx := ctx(t)
	var ids []int64
	for _, n := range []string{"a", "b", "c"} {
		j, err := c.CreateJob(ctx, cronJob(n))
		if err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
		if j.Name != n || j.MaxRetries != chronos.DefaultMaxRetries || !j.Enabled || j.NextRunAt == nil {
			t.Fatalf("created %+v", j.Job)
		}
		ids = append(ids, j.ID)
	}
	p, err := c.ListJobs(ctx, client.JobFilter{Limit: 2})
	if err != nil || len(p.Jobs) != 2 || p.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", p, err)
	}
	all, err := c.AllJobs(ctx, client.JobFilter{Limit: 1})
	if err != nil || len(all) != 3 {
		t.Fatalf("AllJobs: %d jobs, %v", len(all), err)
	}
	// PATCH is partial: only the Set field changes.
	j, err := c.UpdateJob(ctx, ids[0], &chronos.JobUpdate{MaxRetries: chronos.Some(7)})
	if err != nil || j.MaxRetries != 7 || j.CronExpr == nil || *j.CronExpr != "0 3 * * *" {
		t.Fatalf("update: %+v, %v", j, err)
	}
	if j, err = c.PauseJob(ctx, ids[0]); err != nil || j.Enabled || j.NextRunAt != nil {
		t.Fatalf("pause: %+v, %v", j, err)
	}
	f := false
	if p, err := c.ListJobs(ctx, client.JobFilter{Enabled: &f}); err != nil || len(p.Jobs) != 1 || p.Jobs[0].ID != ids[0] {
		t.Fatalf("paused jobs: %+v, %v", p, err)
	}
	if j, err = c.ResumeJob(ctx, ids[0]); err != nil || !j.Enabled || j.NextRunAt == nil {
		t.Fatalf("resume: %+v, %v", j, err)
	}
	r, err := c.TriggerJob(ctx, ids[1])
	if err != nil || r.JobID != ids[1] || r.Trigger != chronos.TriggerManual || r.Status != chronos.StatusPending {
		t.Fatalf("trigger: %+v, %v", r, err)
	}
	if got, err := c.GetRun(ctx, r.ID); err != nil || got.ID != r.ID {
		t.Fatalf("get run: %+v, %v", got, err)
	}
	if rp, err := c.ListJobRuns(ctx, ids[1], client.RunFilter{Status: chronos.StatusPending}); err != nil || len(rp.Runs) != 1 {
		t.Fatalf("job runs: %+v, %v", rp, err)
	}
	// Redriving a pending run is a conflict, with the API's code.
	if _, err := c.RedriveRun(ctx, r.ID); client.Code(err) != chronos.ECONFLICT {
		t.Fatalf("redrive of a pending run: %v", err)
	}
	if err := c.DeleteJob(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetJob(ctx, ids[2])
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 404 || ce.API.Code != chronos.ENOTFOUND || chronos.ErrorCode(err) != chronos.ENOTFOUND {
		t.Fatalf("get deleted job: %v", err)
	}
}

func TestErrorsCarryCodesAndFields(t *testing.T) {
	t.Parallel()
	c, url := newServer(t)
	ctx := ctx(t)
	_, err := c.CreateJob(ctx, &chronos.JobUpdate{Name: chronos.Some("x"), CronExpr: chronos.Some("not cron"), TargetURL: chronos.Some("ftp://x")})
	var ae *chronos.Error
	if !errors.As(err, &ae) || ae.Code != chronos.EINVALID || ae.Fields["cron_expr"] == "" || ae.Fields["target_url"] == "" {
		t.Fatalf("invalid create: %v", err)
	}
	bad, _ := client.New(url, "wrong-key")
	if _, err := bad.ListJobs(ctx, client.JobFilter{}); client.Code(err) != chronos.EUNAUTHORIZED {
		t.Fatalf("wrong key: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.ListJobs(cctx, client.JobFilter{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if _, err := client.New("127.0.0.1:8080", ""); err == nil {
		t.Fatal("a URL without a scheme was accepted")
	}
}

func TestEncodeUpdateSendsOnlySetFields(t *testing.T) {
	t.Parallel()
	b, err := client.EncodeUpdate(&chronos.JobUpdate{MaxRetries: chronos.Some(0), RunAt: chronos.Opt[time.Time]{Set: true, Null: true}})
	if err != nil || string(b) != `{"max_retries":0,"run_at":null}` {
		t.Fatalf("EncodeUpdate = %s, %v", b, err)
	}
}

func TestParseSelector(t *testing.T) {
	t.Parallel()
	s, err := client.ParseSelector("team=payments, env=prod")
	if err != nil || s.String() != "env=prod,team=payments" || !s.Matches(map[string]string{"team": "payments", "env": "prod", "x": "y"}) || s.Matches(map[string]string{"team": "payments"}) {
		t.Fatalf("ParseSelector: %v, %v", s, err)
	}
	for _, bad := range []string{"team", "=x", "a=1,a=2"} {
		if _, err := client.ParseSelector(bad); client.Code(err) != chronos.EINVALID {
			t.Errorf("ParseSelector(%q): %v", bad, err)
		}
	}
}
