package chronos_test

import (
	"encoding/json"
	"math/rand/v2"
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

// TestCreationChangesMatchesJobChangesOnVariedJobs: the creation entry's
// own encoding of plain values agrees byte for byte with json.Marshal of
// JobChanges(nil, job) on jobs whose every field varies (variedJob).
func TestCreationChangesMatchesJobChangesOnVariedJobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2026))
	for i := range 3000 {
		j := variedJob(rng, i)
		want, err := json.Marshal(chronos.JobChanges(nil, j))
		if err != nil {
			t.Fatal(err)
		}
		if got := chronos.CreationChanges(j); got != string(want) {
			t.Fatalf("job %d: CreationChanges:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestAppendJSONMatchesMarshal: a job's own encoding is json.Marshal's,
// byte for byte, on jobs whose every field varies (variedJob).
func TestAppendJSONMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 2026))
	for i := range 3000 {
		j := variedJob(rng, i)
		if i%2 == 0 {
			n := j.CreatedAt.Add(time.Hour)
			j.NextRunAt, j.UpdatedAt, j.State = &n, n, chronos.JobState("scheduled")
		}
		want, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if got := j.AppendJSON([]byte("prefix")); string(got) != "prefix"+string(want) {
			t.Fatalf("job %d: AppendJSON:\n got %s\nwant prefix%s", i, got, want)
		}
	}
}

// variedJob is a job whose every field varies with rng: strings that need
// escaping or not, nil and empty maps and lists, payloads compact or not,
// times with and without fractions and zones, floats in and out of the
// range written without an exponent, pointers set and unset.
func variedJob(rng *rand.Rand, i int) *chronos.Job {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	str := func() string {
		return pick("", "nightly", "a b", `q"uote`, `back\slash`, "<b>&", "tab\there", "é", "line\u2028sep", "\x7f", "plain-Name_1.2")
	}
	when := func() time.Time {
		return time.Date(1990+rng.IntN(60), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), 0, rng.IntN(60),
			[]int{0, 500, 123456789}[rng.IntN(3)],
			[]*time.Location{time.UTC, time.FixedZone("X", 5*3600+1800), time.FixedZone("Y", -7*3600)}[rng.IntN(3)])
	}
	float := func() float64 { return []float64{0, 2, 0.5, 600, 1e-7, 1e22, -3.25, 123456.789, 1e20}[rng.IntN(9)] }
	j := &chronos.Job{ID: int64(i), Name: str(), Description: str(), Timezone: str(), TargetURL: str(),
		Method: str(), TimeoutSeconds: rng.IntN(100) - 5, MaxRetries: rng.IntN(10),
		Backoff: chronos.BackoffStrategy(str()), Overlap: chronos.OverlapPolicy(str()),
		BackoffBaseSeconds: float(), BackoffMaxSeconds: float(), Enabled: rng.IntN(2) == 0,
		Misfire: chronos.MisfirePolicy(str()), JitterSeconds: rng.IntN(5), CreatedAt: when(),
		CalendarPolicy: chronos.CalendarPolicy(str())}
	if rng.IntN(2) == 0 {
		c := str()
		j.CronExpr = &c
	} else {
		r := when()
		j.RunAt = &r
	}
	if rng.IntN(2) == 0 {
		s, e := when(), when()
		j.StartsAt, j.EndsAt = &s, &e
	}
	if rng.IntN(2) == 0 {
		d := rng.IntN(1000)
		j.StartingDeadlineSeconds = &d
	}
	if rng.IntN(2) == 0 {
		u, k := str(), str()
		j.OnDeadURL, j.LimitKey = &u, &k
	}
	switch rng.IntN(3) {
	case 1:
		j.Labels = map[string]string{}
	case 2:
		j.Labels = map[string]string{str(): str(), str(): str()}
	}
	switch rng.IntN(3) {
	case 1:
		j.Headers = map[string]string{}
	case 2:
		j.Headers = map[string]string{"Authorization": str(), "X-A": str()}
		j.SecretHeaders = []string{"Authorization"}
	}
	switch rng.IntN(3) {
	case 1:
		j.Exclude = []chronos.DateRange{}
	case 2:
		j.Exclude = []chronos.DateRange{{From: str(), To: str()}}
	}
	switch rng.IntN(3) {
	case 1:
		j.Calendars = []string{}
	case 2:
		j.Calendars = []string{str()}
	}
	if rng.IntN(2) == 0 {
		exp := when()
		j.SigningSecrets = []chronos.SigningSecret{{Secret: "s", CreatedAt: when(), ExpiresAt: &exp}}
	}
	j.Payload = json.RawMessage(pick("", "null", `{"n":1}`, `{ "n" : [1, 2] }`, `"<&>"`, "[\"\u2028\"]", `{"é":"\\u00e9"}`))
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	return j
}
