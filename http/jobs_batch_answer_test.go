package http

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// jobBatchResult is the body of a created batch as json.Marshal would
// encode it: what batchAnswer must write.
type jobBatchResult struct {
	Jobs []any `json:"jobs"` // each a job, with signing_secret when one was generated
}

// TestBatchAnswerIsTheBatchEncoded: the batch's 201, written a job at a
// time, is json.Marshal of jobBatchResult byte for byte, with and without
// generated secrets, headers to mask and values to escape.
func TestBatchAnswerIsTheBatchEncoded(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 600, time.FixedZone("X", 3600))
	cron := "*/5 * * * *"
	jobs := []*chronos.Job{
		{ID: 1, Name: "a", RunAt: &at, TargetURL: "http://127.0.0.1:9/a", CreatedAt: at, UpdatedAt: at},
		{ID: 2, Name: `b "<&>"`, CronExpr: &cron, TargetURL: "http://127.0.0.1:9/b?x=1&y=2", CreatedAt: at,
			Headers: map[string]string{"Authorization": "Bearer s3cret", "X-A": "1"}, SecretHeaders: []string{"Authorization"},
			Labels: map[string]string{"team": "a"}, Payload: json.RawMessage(`{ "n": 1 }`), NextRunAt: &at},
		{ID: 3, Name: "c", RunAt: &at, TargetURL: "http://127.0.0.1:9/c", CreatedAt: at,
			SigningSecrets: []chronos.SigningSecret{{Secret: "whsec_x", CreatedAt: at}}},
	}
	for _, j := range jobs {
		j.ApplyDefaults()
	}
	secrets := []string{"", "", `whsec_"new"`}

	want := jobBatchResult{Jobs: make([]any, len(jobs))}
	for i, j := range jobs {
		want.Jobs[i] = jobUTC(j)
		if secrets[i] != "" {
			want.Jobs[i] = jobWithSecret{jobUTC(j), secrets[i]}
		}
	}
	wantBody, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := batchAnswer(jobs, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body) != string(wantBody) {
		t.Errorf("batch answer:\n got %s\nwant %s", got.Body, wantBody)
	}
	if got.Status != 201 || got.ContentType != jsonContentType {
		t.Errorf("status %d, content type %q: want 201, %q", got.Status, got.ContentType, jsonContentType)
	}
}
