package reactor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Headers Chronos sets on every delivery.
const (
	HeaderRunID       = "X-Chronos-Run-Id"
	HeaderAttempt     = "X-Chronos-Attempt"
	HeaderScheduledAt = "X-Chronos-Scheduled-At"
	HeaderTimestamp   = "X-Chronos-Timestamp"
	HeaderSignature   = "X-Chronos-Signature"
	UserAgent         = "chronos"
)

// Sign returns the X-Chronos-Signature value for a request body sent at
// timestamp (unix seconds, as written in X-Chronos-Timestamp):
// "v1=" + hex(HMAC-SHA256(secret, timestamp + "." + body)). The version
// prefix leaves room for another scheme later; targets verify with the
// same function over the header value and the raw body.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature reports, in constant time, whether sig is the signature
// of body at timestamp under secret. It does not judge the timestamp's age;
// the caller must reject stale ones.
func VerifySignature(secret []byte, timestamp string, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(sig))
}
