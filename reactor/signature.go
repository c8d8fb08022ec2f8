package reactor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// Headers Chronos sets on every delivery.
const (
	HeaderRunID       = "X-Chronos-Run-Id"
	HeaderAttempt     = "X-Chronos-Attempt"
	HeaderScheduledAt = "X-Chronos-Scheduled-At"
	HeaderTimestamp   = "X-Chronos-Timestamp"
	HeaderSignature   = "X-Chronos-Signature" // legacy v1=<hex>, cluster secret only
	UserAgent         = "chronos"

	// Standard Webhooks (https://www.standardwebhooks.com).
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// WebhookID is the webhook-id of a run's deliveries: the same for every
// attempt, so a target deduplicates on it.
func WebhookID(runID int64) string { return "run_" + strconv.FormatInt(runID, 10) }

// SignWebhook returns one Standard Webhooks signature,
// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)),
// where key is the decoded secret (chronos.SigningKey) and timestamp the
// webhook-timestamp value (unix seconds).
func SignWebhook(key []byte, id, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte("."))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// VerifyWebhook reports, in constant time per comparison, whether any
// signature of a webhook-signature header value (space-separated) is the
// signature of id, timestamp and body under key. It does not judge the
// timestamp's age; the caller must reject stale ones.
func VerifyWebhook(key []byte, id, timestamp string, body []byte, header string) bool {
	want := []byte(SignWebhook(key, id, timestamp, body))
	ok := false
	for _, sig := range strings.Fields(header) {
		if hmac.Equal(want, []byte(sig)) {
			ok = true
		}
	}
	return ok
}

// signingKeys are the HMAC keys that sign a delivery of job at now: every
// active secret of the job's own, with a ClusterDefault entry standing for
// the cluster's secret; or, for a job without its own, the cluster's
// secret (e.clusterKeys, shared: callers only read it). None when nothing
// is configured.
func (e *executor) signingKeys(job *chronos.Job, now time.Time) [][]byte {
	if len(job.SigningSecrets) == 0 {
		return e.clusterKeys
	}
	keys := make([][]byte, 0, len(job.SigningSecrets))
	for _, s := range job.SigningSecrets {
		switch {
		case !s.Active(now):
		case s.ClusterDefault:
			keys = append(keys, e.clusterKeys...)
		default:
			keys = append(keys, chronos.SigningKey(s.Secret))
		}
	}
	return keys
}

// sign sets the signature headers of a delivery of run: webhook-id,
// webhook-timestamp and webhook-signature (one v1 signature per active
// key, space-separated, as the convention allows during a rotation), and
// X-Chronos-Timestamp. X-Chronos-Signature (the scheme before Standard
// Webhooks) is kept for jobs signed with the cluster's secret, so older
// targets keep verifying; it binds no message id, so targets should move
// to webhook-signature.
func (e *executor) sign(h http.Header, job *chronos.Job, run *chronos.Run, body []byte) {
	now := time.Now()
	keys := e.signingKeys(job, now)
	if len(keys) == 0 {
		return
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	setWebhookSignature(h, keys, WebhookID(run.ID), ts, body)
	h.Set(HeaderTimestamp, ts)
	if len(job.SigningSecrets) == 0 {
		h.Set(HeaderSignature, Sign(e.secret, ts, body))
	}
}

// setWebhookSignature sets the Standard Webhooks headers of a message id
// sent at ts: its id, its timestamp and a signature of body by each key
// (several while a rotation's grace lasts), for deliveries and dead-run
// alerts alike.
func setWebhookSignature(h http.Header, keys [][]byte, id, ts string, body []byte) {
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = SignWebhook(k, id, ts, body)
	}
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, ts)
	h.Set(HeaderWebhookSignature, strings.Join(sigs, " "))
}

// Sign returns the legacy X-Chronos-Signature value for a request body
// sent at timestamp (unix seconds, as written in X-Chronos-Timestamp):
// "v1=" + hex(HMAC-SHA256(secret, timestamp + "." + body)), keyed with the
// SIGNING_SECRET string's own bytes.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature reports, in constant time, whether sig is the legacy
// signature of body at timestamp under secret. It does not judge the
// timestamp's age; the caller must reject stale ones.
func VerifySignature(secret []byte, timestamp string, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(sig))
}
