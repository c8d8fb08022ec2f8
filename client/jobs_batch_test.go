package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

// TestCreateJobs: a batch is created in order; a refused batch creates
// nothing and names each failing job by its index.
func TestCreateJobs(t *testing.T) {
	t.Parallel()
	c, _ := newServer(t)
	ctx := ctx(t)
	got, err := c.CreateJobs(ctx, []*chronos.JobUpdate{cronJob("a"), cronJob("b")})
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" || got[0].ID == 0 {
		t.Fatalf("create jobs: %+v %v", got, err)
	}
	bad := cronJob("d")
	bad.CronExpr = chronos.Some("nope")
	_, err = c.CreateJobs(ctx, []*chronos.JobUpdate{cronJob("c"), bad})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.API.Fields["jobs[1].cron_expr"] == "" {
		t.Fatalf("refused batch: %v", err)
	}
	if page, err := c.ListJobs(ctx, client.JobFilter{}); err != nil || len(page.Jobs) != 2 {
		t.Fatalf("jobs after a refused batch: %+v %v", page, err)
	}
}

// TestApplyCreatesInBatches: apply sends its creates through the batch
// route (one request for many jobs), and names a failing job.
func TestApplyCreatesInBatches(t *testing.T) {
	t.Parallel()
	_, base := newServer(t)
	target, _ := url.Parse(base)
	var batches, singles atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs/batch":
			batches.Add(1)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
			singles.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	var m strings.Builder
	m.WriteString("jobs:\n")
	for i := range 30 {
		fmt.Fprintf(&m, "  - {name: j-%d, cron_expr: \"@hourly\", target_url: \"http://127.0.0.1:9/x\"}\n", i)
	}
	specs, err := client.LoadManifest([]string{"-"}, strings.NewReader(m.String()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.MakePlan(ctx(t), specs, client.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Apply(ctx(t), p, 4)
	if err != nil || res.Created != 30 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if batches.Load() != 1 || singles.Load() != 0 {
		t.Fatalf("%d batch and %d single creates for 30 jobs, want 1 and 0", batches.Load(), singles.Load())
	}
}
