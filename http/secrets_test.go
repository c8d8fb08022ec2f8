package http

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestSecretHeadersMasked: Authorization, Proxy-Authorization, Cookie and
// headers marked secret come back as [redacted] from every job response,
// never appear in the logs, are stored (and so delivered) as given, and
// survive a PATCH that sends the masked value back.
func TestSecretHeadersMasked(t *testing.T) {
	e := parallelEnv(t)
	secrets := map[string]string{
		"Authorization":       "Bearer tok-AAAA",
		"proxy-authorization": "Basic tok-BBBB",
		"Cookie":              "session=tok-CCCC",
		"X-Api-Key":           "tok-DDDD",
	}
	headers := map[string]any{"X-Env": "prod"}
	for k, v := range secrets {
		headers[k] = v
	}
	body := cronJob("masked")
	body["headers"] = headers
	body["secret_headers"] = []string{"x-api-key"}
	created := e.createJob(body)
	path := "/v1/jobs/" + itoa64(created.ID)

	check := func(where string, j *chronos.Job) {
		t.Helper()
		for k := range secrets {
			if j.Headers[k] != chronos.Redacted {
				t.Errorf("%s: header %s = %q, want %s", where, k, j.Headers[k], chronos.Redacted)
			}
		}
		if v := j.Headers["X-Env"]; v != "prod" && v != "staging" {
			t.Errorf("%s: X-Env = %q", where, v)
		}
	}
	check("create", created)
	w := e.do("GET", path, nil)
	wantStatus(t, w, 200)
	check("get", decode[*chronos.Job](t, w))
	w = e.do("GET", "/v1/jobs", nil)
	wantStatus(t, w, 200)
	check("list", decode[jobList](t, w).Jobs[0])

	// A read-modify-write with the masked values keeps the credentials.
	got := decode[*chronos.Job](t, e.do("GET", path, nil))
	got.Headers["X-Env"] = "staging"
	w = e.do("PATCH", path, map[string]any{"headers": got.Headers})
	wantStatus(t, w, 200)
	check("patch", decode[*chronos.Job](t, w))
	stored, err := e.db.Job(context.Background(), created.ID)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range secrets {
		if stored.Headers[k] != v {
			t.Errorf("stored %s = %q, want %q (the target must receive it)", k, stored.Headers[k], v)
		}
	}
	if stored.Headers["X-Env"] != "staging" {
		t.Errorf("X-Env not updated: %q", stored.Headers["X-Env"])
	}
	// A new value replaces a secret; unmarking shows a plain header.
	w = e.do("PATCH", path, map[string]any{"headers": map[string]string{"X-Api-Key": "tok-EEEE"}, "secret_headers": []string{}})
	wantStatus(t, w, 200)
	if j := decode[*chronos.Job](t, w); j.Headers["X-Api-Key"] != "tok-EEEE" || len(j.Headers) != 1 {
		t.Errorf("after unmarking: %v", j.Headers)
	}
	wantFields(t, e.do("PATCH", path, map[string]any{"secret_headers": []string{"bad name"}}), "secret_headers")
	wantFields(t, e.do("PATCH", path, map[string]any{"secret_headers": []string{"A", "a"}}), "secret_headers")

	for _, v := range []string{"tok-AAAA", "tok-BBBB", "tok-CCCC", "tok-DDDD"} {
		if strings.Contains(e.logs.String(), v) {
			t.Errorf("the logs hold secret %s", v)
		}
	}
}

// TestSigningSecretLifecycle: a secret generated at create or by rotation
// is shown once; job responses show only metadata; rotation keeps the old
// secret signing for the grace period; DELETE falls back to the cluster
// secret.
func TestSigningSecretLifecycle(t *testing.T) {
	e := parallelEnv(t)
	body := cronJob("signed")
	body["generate_signing_secret"] = true
	w := e.do("POST", "/v1/jobs", body)
	wantStatus(t, w, 201)
	first := decode[jobWithSecret](t, w)
	if !strings.HasPrefix(first.SigningSecret, "whsec_") || len(first.SigningSecrets) != 1 || first.SigningSecrets[0].ExpiresAt != nil {
		t.Fatalf("create: %s", w.Body.String())
	}
	path := "/v1/jobs/" + itoa64(first.ID)
	w = e.do("GET", path, nil)
	if strings.Contains(w.Body.String(), first.SigningSecret) || strings.Contains(w.Body.String(), "whsec_") {
		t.Fatalf("GET shows the secret: %s", w.Body.String())
	}
	wantFields(t, e.do("PATCH", path, map[string]any{"generate_signing_secret": true}), "generate_signing_secret")

	before := time.Now()
	w = e.do("POST", path+"/signing-secret", map[string]any{"grace_seconds": 3600})
	wantStatus(t, w, 200)
	second := decode[jobWithSecret](t, w)
	if second.SigningSecret == first.SigningSecret || len(second.SigningSecrets) != 2 {
		t.Fatalf("rotate: %s", w.Body.String())
	}
	old, cur := second.SigningSecrets[0], second.SigningSecrets[1]
	if old.ExpiresAt == nil || old.ExpiresAt.Before(before.Add(59*time.Minute)) || cur.ExpiresAt != nil {
		t.Fatalf("rotate: old %+v, current %+v", old, cur)
	}
	stored, err := e.db.Job(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.SigningSecrets[0].Secret != first.SigningSecret || stored.SigningSecrets[1].Secret != second.SigningSecret {
		t.Fatal("stored secrets are not the generated ones")
	}
	// Rotating with no grace ends every previous secret.
	w = e.do("POST", path+"/signing-secret", nil)
	wantStatus(t, w, 200)
	if third := decode[jobWithSecret](t, w); len(third.SigningSecrets) != 1 {
		t.Fatalf("rotate without grace: %s", w.Body.String())
	}
	wantFields(t, e.do("POST", path+"/signing-secret", map[string]any{"grace_seconds": -1}), "grace_seconds")
	wantFields(t, e.do("POST", path+"/signing-secret", map[string]any{"grace_seconds": 1 << 40}), "grace_seconds")
	wantStatus(t, e.do("POST", "/v1/jobs/999999/signing-secret", nil), 404)

	w = e.do("DELETE", path+"/signing-secret", nil)
	wantStatus(t, w, 200)
	if j := decode[*chronos.Job](t, w); len(j.SigningSecrets) != 0 {
		t.Fatalf("after delete: %s", w.Body.String())
	}
	// A job's first own secret with a grace keeps the cluster secret
	// signing through it.
	w = e.do("POST", path+"/signing-secret", map[string]any{"grace_seconds": 60})
	wantStatus(t, w, 200)
	if j := decode[jobWithSecret](t, w); len(j.SigningSecrets) != 2 || !j.SigningSecrets[0].ClusterDefault {
		t.Fatalf("first secret with grace: %s", w.Body.String())
	}
	if strings.Contains(e.logs.String(), "whsec_") {
		t.Error("a signing secret reached the logs")
	}
}

// TestSigningSecretGraceLimit: the API documents 8 secrets in a grace
// period at once. Eight rotations with a grace succeed (the first puts the
// cluster's secret in grace, each later one the previous current secret),
// leaving 9 secrets on the job, every one stored; the 9th rotation with a
// grace is a 409 that says what to do; a rotation without grace still
// works and ends them all.
func TestSigningSecretGraceLimit(t *testing.T) {
	e := parallelEnv(t)
	created := e.createJob(cronJob("rotated"))
	path := "/v1/jobs/" + itoa64(created.ID) + "/signing-secret"
	for i := 1; i <= 8; i++ {
		w := e.do("POST", path, map[string]any{"grace_seconds": 3600})
		if w.Code != 200 {
			t.Fatalf("rotation %d with a grace: %d %s", i, w.Code, w.Body.String())
		}
		if j := decode[jobWithSecret](t, w); len(j.SigningSecrets) != i+1 {
			t.Fatalf("rotation %d: %d secrets, want %d", i, len(j.SigningSecrets), i+1)
		}
	}
	stored, err := e.db.Job(context.Background(), created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stored.SigningSecrets); n != 9 {
		t.Fatalf("stored %d secrets, want 9", n)
	}
	w := e.do("POST", path, map[string]any{"grace_seconds": 3600})
	wantStatus(t, w, 409)
	if !strings.Contains(w.Body.String(), "at most 8") || !strings.Contains(w.Body.String(), "grace_seconds 0") {
		t.Errorf("the 9th rotation's refusal does not explain itself: %s", w.Body.String())
	}
	w = e.do("POST", path, map[string]any{"grace_seconds": 0})
	wantStatus(t, w, 200)
	if j := decode[jobWithSecret](t, w); len(j.SigningSecrets) != 1 {
		t.Fatalf("rotation without grace: %s", w.Body.String())
	}
}
