package http

import (
	"fmt"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
)

// TestJobNamesLabelsSearch: names are unique (409 naming the field),
// descriptions and labels round-trip and PATCH, labels are validated as
// Kubernetes does, and the list filters by name prefix, substring and
// labels, all combined.
func TestJobNamesLabelsSearch(t *testing.T) {
	e := parallelEnv(t)
	mk := func(name, descr string, labels map[string]string) int64 {
		b := cronJob(name)
		b["description"] = descr
		b["labels"] = labels
		j := e.createJob(b)
		if j.Description != descr || len(j.Labels) != len(labels) {
			t.Fatalf("created %+v", j)
		}
		return j.ID
	}
	pay := mk("payments-nightly", "Settles the day's card payments", map[string]string{"team": "payments", "env": "prod"})
	payDev := mk("payments-dev", "", map[string]string{"team": "payments", "env": "dev"})
	rep := mk("reports_50%", "Nightly REPORT for finance", map[string]string{"team": "finance", "example.com/tier": "gold"})

	w := e.do("POST", "/v1/jobs", cronJob("payments-dev"))
	wantStatus(t, w, nethttp.StatusConflict)
	if errorOf(t, w).Fields["name"] == "" {
		t.Fatalf("409 does not name the field: %s", w.Body.String())
	}
	wantStatus(t, e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", rep), map[string]any{"name": "payments-nightly"}), nethttp.StatusConflict)

	ids := func(query string) []int64 {
		t.Helper()
		l := decode[jobList](t, e.do("GET", "/v1/jobs?"+query, nil))
		out := []int64{}
		for _, j := range l.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	want := func(query string, expect ...int64) {
		t.Helper()
		if got := ids(query); fmt.Sprint(got) != fmt.Sprint(append([]int64{}, expect...)) {
			t.Errorf("?%s: %v, want %v", query, got, expect)
		}
	}
	want("name_prefix=payments-", pay, payDev)
	want("name_prefix=payments-n", pay)
	want("name_prefix=Payments")
	want("name_prefix="+url.QueryEscape("reports_5"), rep)
	want("name_prefix=" + url.QueryEscape("reports%"))
	want("q=report", rep)
	want("q=CARD", pay)
	want("q=nightly", pay, rep)
	want("q="+url.QueryEscape("50%"), rep)
	want("q="+url.QueryEscape("_"), rep)
	want("label=team=payments", pay, payDev)
	want("label=team=payments&label=env=prod", pay)
	want("label=team=payments&label=env=staging")
	want("label="+url.QueryEscape("example.com/tier=gold"), rep)
	want("label=team=payments&name_prefix=payments-d&q=dev", payDev)
	want("label=team=payments&limit=1", pay)

	// PATCH replaces labels and the description; null clears them.
	j := decode[jobList](t, e.do("GET", "/v1/jobs?name_prefix=payments-dev", nil)).Jobs[0]
	w = e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"labels": map[string]string{"team": "core"}, "description": "moved"})
	wantStatus(t, w, nethttp.StatusOK)
	if got := decode[jobList](t, e.do("GET", "/v1/jobs?label=team=core", nil)); len(got.Jobs) != 1 || got.Jobs[0].Description != "moved" {
		t.Fatalf("after PATCH %+v", got)
	}
	w = e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), `{"labels": null, "description": null}`)
	wantStatus(t, w, nethttp.StatusOK)
	if body := w.Body.String(); !strings.Contains(body, `"labels":{}`) || !strings.Contains(body, `"description":""`) {
		t.Fatalf("cleared: %s", body)
	}

	// Kubernetes label syntax.
	bad := []map[string]string{
		{"-team": "x"}, {"team-": "x"}, {"a/b/c": "x"}, {"/team": "x"}, {"Example.com/x": "y"}, {"team": "-x"},
		{strings.Repeat("k", 64): "x"}, {"team": strings.Repeat("v", 64)}, {"team": "a b"}, {"": "x"},
	}
	for _, l := range bad {
		b := cronJob("bad-labels")
		b["labels"] = l
		wantFields(t, e.do("POST", "/v1/jobs", b), "labels")
	}
	many := map[string]string{}
	for i := 0; i < 17; i++ {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	b := cronJob("too-many")
	b["labels"] = many
	wantFields(t, e.do("POST", "/v1/jobs", b), "labels")
	b = cronJob("long-description")
	b["description"] = strings.Repeat("d", 2001)
	wantFields(t, e.do("POST", "/v1/jobs", b), "description")
	b = cronJob("fine-labels")
	b["labels"] = map[string]string{"a.b-c_d": "", "sub.example.com/x": "Y.z-1_2"}
	wantStatus(t, e.do("POST", "/v1/jobs", b), nethttp.StatusCreated)

	wantFields(t, e.do("GET", "/v1/jobs?label=team", nil), "label")
	wantFields(t, e.do("GET", "/v1/jobs?label=-x=y", nil), "label")
	wantFields(t, e.do("GET", "/v1/jobs?label=t=a&label=t=b", nil), "label")
	wantFields(t, e.do("GET", "/v1/jobs?q=", nil), "q")
	wantFields(t, e.do("GET", "/v1/jobs?name_prefix="+strings.Repeat("n", 201), nil), "name_prefix")
	wantFields(t, e.do("GET", "/v1/jobs?q=a&q=b", nil), "q")
}
