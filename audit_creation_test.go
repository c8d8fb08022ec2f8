package chronos_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestCreationChangesIsJobChangesOfACreate: the create's audit entry,
// written by the fast path, says what JobChanges(nil, job) says, field for
// field, secrets masked.
func TestCreationChangesIsJobChangesOfACreate(t *testing.T) {
	cron := "*/5 * * * *"
	j := &chronos.Job{ID: 7, Name: "nightly", CronExpr: &cron, Timezone: "Europe/Paris",
		TargetURL: "https://example.test/hook", Method: "POST",
		Headers:     map[string]string{"Authorization": "Bearer s3cret", "X-A": "1"},
		Labels:      map[string]string{"team": "a"},
		Description: "a \"quoted\" <description>", CreatedAt: time.Now()}
	j.SecretHeaders = []string{"Authorization"}
	j.ApplyDefaults()

	want, err := json.Marshal(chronos.JobChanges(nil, j))
	if err != nil {
		t.Fatal(err)
	}
	got := chronos.CreationChanges(j)
	if got != string(want) {
		t.Errorf("CreationChanges:\n got %s\nwant %s", got, want)
	}
	var m map[string]chronos.FieldChange
	if err := json.Unmarshal([]byte(got), &m); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if _, ok := m["id"]; ok {
		t.Error("id is recorded; ids and timestamps are not the user's to change")
	}
	if h := string(m["headers"].After); h == "" || strings.Contains(h, "s3cret") {
		t.Errorf("headers %s: want present and the secret masked", h)
	}
}
