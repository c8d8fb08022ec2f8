package http

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"
)

// TestJobHistory: a create, a PATCH and a pause by two named keys, a
// trigger and a delete show in the history, newest first, with the changed
// fields before and after and secrets masked; the history outlives the
// job, pages, and is pruned after the retention.
func TestJobHistory(t *testing.T) {
	e := parallelEnv(t, func(c *Config) {
		c.APIKeys = []string{"alice:write:" + testKey, "bob:write:bob-key-0123456789", "viewer:read:view-key-0123456789"}
	})
	body := cronJob("audited")
	body["headers"] = map[string]string{"Authorization": "Bearer s3cret", "X-Env": "prod"}
	j := e.createJob(body)
	path := fmt.Sprintf("/v1/jobs/%d", j.ID)
	wantStatus(t, e.doKey("PATCH", path, map[string]any{"max_retries": 7, "headers": map[string]string{"Authorization": "Bearer n3w", "X-Env": "prod"}}, "bob-key-0123456789"), 200)
	wantStatus(t, e.doKey("PATCH", path, map[string]any{"enabled": false}, "bob-key-0123456789"), 200)
	wantStatus(t, e.do("PATCH", path, map[string]any{"enabled": false}), 200) // no change, no entry
	wantStatus(t, e.do("POST", path+"/trigger", nil), nethttp.StatusAccepted)

	// A rotated signing secret is an update whose values stay out.
	other := e.createJob(cronJob("rotated"))
	w := e.do("POST", fmt.Sprintf("/v1/jobs/%d/signing-secret", other.ID), nil)
	wantStatus(t, w, 200)
	secret := decode[map[string]any](t, w)["signing_secret"].(string)
	rh := decode[historyPage](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d/history", other.ID), nil))
	if len(rh.Entries) != 2 || rh.Entries[0].Action != "update" || rh.Entries[0].Changes["signing_secrets"].After == nil {
		t.Fatalf("rotation history %+v", rh)
	}
	if raw, _ := json.Marshal(rh); strings.Contains(string(raw), secret) {
		t.Fatalf("the signing secret leaked into the history")
	}

	h := decode[historyPage](t, e.doKey("GET", path+"/history", nil, "view-key-0123456789"))
	if len(h.Entries) != 4 {
		t.Fatalf("history %+v", h)
	}
	want := []struct{ action, actor string }{{"trigger", "alice"}, {"pause", "bob"}, {"update", "bob"}, {"create", "alice"}}
	for i, w := range want {
		if string(h.Entries[i].Action) != w.action || h.Entries[i].Actor != w.actor {
			t.Errorf("entry %d: %s by %s, want %s by %s", i, h.Entries[i].Action, h.Entries[i].Actor, w.action, w.actor)
		}
	}
	if h.Entries[0].RunID == nil {
		t.Errorf("trigger entry without run id")
	}
	upd := h.Entries[2].Changes
	if string(upd["max_retries"].Before) != "3" || string(upd["max_retries"].After) != "7" || upd["headers"].After == nil {
		t.Errorf("update changes %+v", upd)
	}
	if p := h.Entries[1].Changes; string(p["enabled"].Before) != "true" || string(p["enabled"].After) != "false" || len(p) != 1 {
		t.Errorf("pause changes %+v", p)
	}
	if c := h.Entries[3].Changes; string(c["name"].After) != `"audited"` || c["name"].Before != nil {
		t.Errorf("create changes %+v", c)
	}
	raw, _ := json.Marshal(h)
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "n3w") {
		t.Fatalf("a secret leaked into the history: %s", raw)
	}

	page := decode[historyPage](t, e.do("GET", path+"/history?limit=3", nil))
	if len(page.Entries) != 3 || page.NextCursor == nil {
		t.Fatalf("first page %+v", page)
	}
	rest := decode[historyPage](t, e.do("GET", path+"/history?limit=3&cursor="+*page.NextCursor, nil))
	if len(rest.Entries) != 1 || rest.Entries[0].Action != "create" || rest.NextCursor != nil {
		t.Fatalf("second page %+v", rest)
	}

	wantStatus(t, e.do("DELETE", path, nil), nethttp.StatusNoContent)
	h = decode[historyPage](t, e.do("GET", path+"/history", nil))
	if len(h.Entries) != 5 || h.Entries[0].Action != "delete" || string(h.Entries[0].Changes["name"].Before) != `"audited"` {
		t.Fatalf("after delete %+v", h.Entries[0])
	}
	wantStatus(t, e.do("GET", "/v1/jobs/999999/history", nil), nethttp.StatusNotFound)
	wantFields(t, e.do("GET", path+"/history?cursor=bad", nil), "cursor")

	ctx := context.Background()
	if _, err := e.db.Pool.Exec(ctx, `UPDATE job_audit SET at = now() - interval '91 days' WHERE action = 'create' AND job_id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.db.PruneAudit(ctx, 90*24*3600e9, 100); err != nil || n != 1 {
		t.Fatalf("pruned %d %v", n, err)
	}
}
