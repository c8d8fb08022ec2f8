package sql_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
)

// A creation entry lists every field of the job as it was created, whether
// it was written to creation (json, migration 039) or, by a release
// before it, to changes (jsonb): History reads either, and the two read
// the same.
func TestHistoryReadsCreationEntriesOfBothShapes(t *testing.T) {
	db, ctx, j := parallelJob(t, "*/5 * * * *", func(j *chronos.Job) { j.Description = "nightly export" })

	var inCreation, inChanges bool
	if err := db.Pool.QueryRow(ctx, `SELECT creation IS NOT NULL, changes <> '{}' FROM job_audit WHERE job_id = $1 AND action = 'create'`, j.ID).
		Scan(&inCreation, &inChanges); err != nil {
		t.Fatal(err)
	}
	if !inCreation || inChanges {
		t.Fatalf("creation entry: fields in creation %v, in changes %v; want creation only", inCreation, inChanges)
	}
	created := func() map[string]chronos.FieldChange {
		t.Helper()
		h, _, err := db.History(ctx, j.ID, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0].Action != chronos.AuditCreate {
			t.Fatalf("history %+v, want the creation entry alone", h)
		}
		return h[0].Changes
	}
	now := created()
	if got, want := string(now["description"].After), `"nightly export"`; got != want {
		t.Fatalf("creation entry's description %s, want %s", got, want)
	}
	if got, want := string(now["cron_expr"].After), `"*/5 * * * *"`; got != want {
		t.Fatalf("creation entry's cron_expr %s, want %s", got, want)
	}

	// The shape of a release before 039: the same fields, in changes.
	if _, err := db.Pool.Exec(ctx, `UPDATE job_audit SET changes = creation::jsonb, creation = NULL WHERE job_id = $1 AND action = 'create'`, j.ID); err != nil {
		t.Fatal(err)
	}
	before := created()
	a, _ := json.Marshal(now)
	b, _ := json.Marshal(before)
	if string(a) != string(b) {
		t.Fatalf("the creation entry read from changes:\n%s\nfrom creation:\n%s", b, a)
	}
}

// A job's payload is refused exactly when Postgres's jsonb would refuse it
// (\u0000, half a surrogate pair): it is stored as written, but the job's
// audit entries hold it as jsonb, so a payload jsonb refuses would leave a
// job that can be neither edited nor deleted.
func TestPayloadEscapesAgreeWithJSONB(t *testing.T) {
	db, ctx := parallelDB(t)
	for _, p := range []string{
		`"plain"`, `"\u0000"`, `{"\u0000":1}`, `"a\\u0000"`, `"\\\u0000"`, `"\u0001"`, `"\u00e9"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83d\u0041"`, `"\ud83dx"`, `["\uD83D\uDE00", "\uDBFF\uDFFF"]`,
		`"\"\\\/\b\f\n\r\t"`, `"x\\"`, `{"a":"\\u0000","b":"\u0041"}`, `1`, `"\uFFFF"`,
	} {
		_, castErr := db.Pool.Exec(ctx, "SELECT $1::text::jsonb", p)
		j := cronJob("* * * * *")
		j.Payload = json.RawMessage(p)
		err := j.Validate()
		refused := err != nil && strings.Contains(err.Error(), "payload")
		if refused != (castErr != nil) {
			t.Errorf("payload %s: refused %v (%v), jsonb refuses it %v (%v)", p, refused, err, castErr != nil, castErr)
		}
	}
}
