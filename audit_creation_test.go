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

// TestCreationChangesSplitsNestedValues: values holding the JSON
// delimiters (a payload's nested objects, arrays and strings with quotes,
// commas, braces and escapes) come out whole, as JobChanges has them.
func TestCreationChangesSplitsNestedValues(t *testing.T) {
	run := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	j := &chronos.Job{ID: 8, Name: `a,"b"}{[`, RunAt: &run, TargetURL: "https://example.test/h?a=1&b=}",
		Payload:     json.RawMessage(`{"x":[1,{"y":"},\"]{"}],"z":"\\","w":{}}`),
		Headers:     map[string]string{"X-Q": `"},{`},
		Labels:      map[string]string{"k,}": `v"]`},
		Description: "line\nnext \\ end", CreatedAt: time.Now()}
	j.ApplyDefaults()
	want, err := json.Marshal(chronos.JobChanges(nil, j))
	if err != nil {
		t.Fatal(err)
	}
	if got := chronos.CreationChanges(j); got != string(want) {
		t.Errorf("CreationChanges:\n got %s\nwant %s", got, want)
	}
	if got := chronos.CreationChanges(nil); got != "{}" {
		t.Errorf("CreationChanges(nil) = %s, want {}", got)
	}
}
