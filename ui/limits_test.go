package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// TestConsoleShowsLimits: the overview lists the declared limits with
// their state, the job page shows the job's limit, and the edit form sets
// and refuses limit_key.
func TestConsoleShowsLimits(t *testing.T) {
	e, c := signedIn(t, writeKey)
	ctx := context.Background()
	conc, rate, per := 4, 100, 60
	if _, err := e.in.DB.PutLimit(ctx, &chronos.Limit{Key: "api.example", MaxConcurrency: &conc, Rate: &rate, PerSeconds: &per}); err != nil {
		t.Fatal(err)
	}
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "limited", CronExpr: ptr("30 2 * * *"), TargetURL: "http://127.0.0.1:9/x",
		LimitKey: ptr("api.example")})
	id := strconv.FormatInt(j.ID, 10)

	_, body := c.get("/ui/")
	if i := strings.Index(body, `id="limits"`); i < 0 || !strings.Contains(body[i:], "<code>api.example</code>") ||
		!strings.Contains(body[i:], "0 / 4") || !strings.Contains(body[i:], "100 per 60 s") {
		t.Fatalf("the overview does not show the limit:\n%s", body)
	}
	_, body = c.get("/ui/jobs/" + id)
	if !strings.Contains(body, "<code>api.example</code> · 0 of 4 in flight · 100 per 60 s (100 tokens left) · 0 waiting") {
		t.Fatalf("the job page does not show its limit:\n%s", body)
	}
	_, body = c.get("/ui/jobs/" + id + "/edit")
	if !strings.Contains(body, `name="limit_key" type="text" value="api.example"`) {
		t.Fatalf("the edit form does not hold the limit key:\n%s", body)
	}
	form := url.Values{"name": {"limited"}, "kind": {"cron"}, "cron_expr": {"30 2 * * *"}, "timezone": {"UTC"},
		"method": {"POST"}, "target_url": {"http://127.0.0.1:9/x"}, "timeout_seconds": {"30"}, "max_retries": {"3"},
		"backoff": {"exponential"}, "backoff_base_seconds": {"2"}, "backoff_max_seconds": {"600"}, "overlap": {"allow"},
		"limit_key": {"nope"}}
	code, _, body := c.post("/ui/jobs/"+id, form)
	if code == http.StatusSeeOther || !strings.Contains(body, `no limit &#34;nope&#34;`) {
		t.Fatalf("an unknown key: %d\n%s", code, body[strings.Index(body, "limit_key"):])
	}
	form.Set("limit_key", "")
	if code, _, body := c.post("/ui/jobs/"+id, form); code != http.StatusSeeOther {
		t.Fatalf("clearing the key: %d\n%s", code, body)
	}
	if got, _ := e.in.DB.Job(ctx, j.ID); got.LimitKey != nil {
		t.Fatalf("the form left limit_key %q", *got.LimitKey)
	}
}
