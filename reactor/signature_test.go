package reactor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/chronoshq/chronos"
)

// The test vector published with the Standard Webhooks specification and
// every reference library.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = "1614265330"
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignWebhookTestVector(t *testing.T) {
	t.Parallel()
	key := chronos.SigningKey(vectorSecret)
	if got := SignWebhook(key, vectorID, vectorTimestamp, []byte(vectorPayload)); got != vectorSignature {
		t.Fatalf("SignWebhook = %s, want %s", got, vectorSignature)
	}
	// The reference library agrees, and accepts our signature.
	wh, err := standardwebhooks.NewWebhook(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := strconv.ParseInt(vectorTimestamp, 10, 64)
	ref, _ := wh.Sign(vectorID, time.Unix(sec, 0), []byte(vectorPayload))
	if ref != vectorSignature {
		t.Fatalf("reference library signs %s", ref)
	}
	h := http.Header{}
	h.Set(HeaderWebhookID, vectorID)
	h.Set(HeaderWebhookTimestamp, vectorTimestamp)
	h.Set(HeaderWebhookSignature, "v1,bm90IHRoaXMgb25l "+vectorSignature)
	if err := wh.VerifyIgnoringTimestamp([]byte(vectorPayload), h); err != nil {
		t.Fatalf("reference library refuses: %v", err)
	}
	if !VerifyWebhook(key, vectorID, vectorTimestamp, []byte(vectorPayload), h.Get(HeaderWebhookSignature)) {
		t.Fatal("VerifyWebhook refuses the vector among two signatures")
	}
	for _, tamper := range []struct{ id, ts, body string }{
		{"msg_other", vectorTimestamp, vectorPayload},
		{vectorID, "1614265331", vectorPayload},
		{vectorID, vectorTimestamp, `{"test": 2432232315}`},
	} {
		if VerifyWebhook(key, tamper.id, tamper.ts, []byte(tamper.body), vectorSignature) {
			t.Errorf("tampered %+v verifies", tamper)
		}
	}
	// Empty bodies sent in the same second by two runs no longer share a
	// signature: the id is signed too.
	if SignWebhook(key, WebhookID(1), "1", nil) == SignWebhook(key, WebhookID(2), "1", nil) {
		t.Error("two runs' empty deliveries share a signature")
	}
}

// delivery is one request a capture target received.
type delivery struct {
	header http.Header
	body   []byte
}

func captureTarget(t *testing.T) (*httptest.Server, <-chan delivery) {
	t.Helper()
	got := make(chan delivery, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), b}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestDeliveryVerifiesWithStandardWebhooks: a delivery of a job with its
// own secret verifies with the reference library and that secret, carries
// the same webhook-id on every attempt of the run, and, replayed to
// another job's target, fails verification with that job's secret.
func TestDeliveryVerifiesWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	srv, got := captureTarget(t)
	e := newTestExecutor(t, Config{AllowPrivateTargets: true, SigningSecret: "cluster-secret"})
	secretA, secretB := chronos.NewSigningSecret(), chronos.NewSigningSecret()
	now := time.Now().UTC()
	jobA := testJob(srv.URL + "/a")
	jobA.Payload = json.RawMessage(`{"report":"daily"}`)
	jobA.SigningSecrets = []chronos.SigningSecret{{Secret: secretA, CreatedAt: now}}
	jobB := testJob(srv.URL + "/b")
	jobB.ID = 8
	jobB.SigningSecrets = []chronos.SigningSecret{{Secret: secretB, CreatedAt: now}}

	var ids []string
	for attempt := 1; attempt <= 2; attempt++ {
		run := testRun()
		run.AttemptCount = attempt
		if res := e.do(t.Context(), jobA, run); !res.Success() {
			t.Fatalf("attempt %d: %+v", attempt, res)
		}
		d := <-got
		whA, _ := standardwebhooks.NewWebhook(secretA)
		if err := whA.Verify(d.body, d.header); err != nil {
			t.Fatalf("attempt %d: the reference library refuses the delivery: %v\n%v", attempt, err, d.header)
		}
		if d.header.Get(HeaderSignature) != "" {
			t.Error("X-Chronos-Signature (cluster secret) sent for a job with its own secret")
		}
		if d.header.Get(HeaderRunID) != "42" || d.header.Get(HeaderAttempt) != strconv.Itoa(attempt) {
			t.Errorf("X-Chronos headers: %v", d.header)
		}
		ids = append(ids, d.header.Get(HeaderWebhookID))

		// The same delivery replayed to job B's target, checked with B's
		// secret, fails.
		whB, _ := standardwebhooks.NewWebhook(secretB)
		if err := whB.Verify(d.body, d.header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			t.Fatalf("replay to job B verified with B's secret: %v", err)
		}
		// And with the cluster secret, which job A does not use.
		whC, _ := standardwebhooks.NewWebhookRaw([]byte("cluster-secret"))
		if err := whC.Verify(d.body, d.header); err == nil {
			t.Fatal("job A's delivery verifies with the cluster secret")
		}
	}
	if ids[0] != "run_42" || ids[1] != ids[0] {
		t.Errorf("webhook-id across attempts: %v, want run_42 twice", ids)
	}
}

// TestDeliveryRotationAndDefault: during a rotation both secrets verify
// the same delivery; an expired one no longer does; a job without its own
// secret is signed with SIGNING_SECRET, plain or whsec_, and keeps the
// legacy X-Chronos-Signature.
func TestDeliveryRotationAndDefault(t *testing.T) {
	t.Parallel()
	srv, got := captureTarget(t)
	now := time.Now().UTC()
	later, earlier := now.Add(time.Hour), now.Add(-time.Second)
	oldS, newS, gone := chronos.NewSigningSecret(), chronos.NewSigningSecret(), chronos.NewSigningSecret()

	e := newTestExecutor(t, Config{AllowPrivateTargets: true, SigningSecret: "dev-secret"})
	job := testJob(srv.URL)
	job.SigningSecrets = []chronos.SigningSecret{
		{Secret: gone, CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: &earlier},
		{Secret: oldS, CreatedAt: now.Add(-time.Hour), ExpiresAt: &later},
		{Secret: newS, CreatedAt: now},
	}
	if res := e.do(t.Context(), job, testRun()); !res.Success() {
		t.Fatalf("%+v", res)
	}
	d := <-got
	if n := len(strings.Fields(d.header.Get(HeaderWebhookSignature))); n != 2 {
		t.Fatalf("%d signatures, want 2: %q", n, d.header.Get(HeaderWebhookSignature))
	}
	for name, s := range map[string]string{"old": oldS, "new": newS} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(d.body, d.header); err != nil {
			t.Errorf("%s secret refuses the delivery during rotation: %v", name, err)
		}
	}
	if wh, _ := standardwebhooks.NewWebhook(gone); wh.Verify(d.body, d.header) == nil {
		t.Error("an expired secret still signs")
	}

	// The cluster's secret through a first secret's grace period.
	job.SigningSecrets = []chronos.SigningSecret{{ClusterDefault: true, ExpiresAt: &later}, {Secret: newS, CreatedAt: now}}
	e.do(t.Context(), job, testRun())
	d = <-got
	if wh, _ := standardwebhooks.NewWebhookRaw([]byte("dev-secret")); wh.Verify(d.body, d.header) != nil {
		t.Error("the cluster secret does not sign during the first secret's grace")
	}

	// No own secret: SIGNING_SECRET, whose whsec_ form is base64 of it.
	job.SigningSecrets = nil
	e.do(t.Context(), job, testRun())
	d = <-got
	wh, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("dev-secret")))
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Errorf("cluster-signed delivery: %v", err)
	}
	if !VerifySignature([]byte("dev-secret"), d.header.Get(HeaderTimestamp), d.body, d.header.Get(HeaderSignature)) {
		t.Error("legacy X-Chronos-Signature missing or wrong")
	}

	// A whsec_ SIGNING_SECRET is decoded like any Standard Webhooks secret.
	e2 := newTestExecutor(t, Config{AllowPrivateTargets: true, SigningSecret: vectorSecret})
	e2.do(t.Context(), job, testRun())
	d = <-got
	if wh, _ := standardwebhooks.NewWebhook(vectorSecret); wh.Verify(d.body, d.header) != nil {
		t.Error("whsec_ SIGNING_SECRET: delivery does not verify")
	}

	// Nothing configured: no signature headers at all.
	e3 := newTestExecutor(t, Config{AllowPrivateTargets: true})
	e3.do(t.Context(), job, testRun())
	d = <-got
	for _, h := range []string{HeaderWebhookID, HeaderWebhookSignature, HeaderSignature} {
		if d.header.Get(h) != "" {
			t.Errorf("unsigned delivery carries %s", h)
		}
	}
}
