package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
)

// TestReadmeDocumentsEveryVariable: a configuration table of the README
// or of a docs/ page has a row for every variable serve reads.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob("../../docs/*.md")
	for _, p := range pages {
		d, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, d...)
	}
	for _, v := range serveVars {
		if !strings.Contains(string(b), "| `"+v.name+"` |") {
			t.Errorf("neither README.md nor docs/*.md has a configuration row for %s", v.name)
		}
	}
}

// verifyFromReadme is the README's Go signature check, word for word.
func verifyFromReadme(secret string, r *http.Request, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// readmeCase is one delivery the README's samples must accept or refuse.
type readmeCase struct {
	name      string
	secret    string // what the target verifies with
	id, ts    string
	signature string
	body      string
	want      bool
}

func readmeCases() []readmeCase {
	secret, other := chronos.NewSigningSecret(), chronos.NewSigningSecret()
	body := `{"msg":"hi"}`
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	sign := func(s, id, ts, b string) string { return reactor.SignWebhook(chronos.SigningKey(s), id, ts, []byte(b)) }
	return []readmeCase{
		{"fresh", secret, "run_1", now, sign(secret, "run_1", now, body), body, true},
		{"rotation: second of two", secret, "run_1", now, sign(other, "run_1", now, body) + " " + sign(secret, "run_1", now, body), body, true},
		{"tampered body", secret, "run_1", now, sign(secret, "run_1", now, body), `{"msg":"ho"}`, false},
		{"other id", secret, "run_2", now, sign(secret, "run_1", now, body), body, false},
		{"replayed to another job", other, "run_1", now, sign(secret, "run_1", now, body), body, false},
		{"old", secret, "run_1", old, sign(secret, "run_1", old, body), body, false},
		{"cluster secret in whsec_ form", "whsec_" + base64.StdEncoding.EncodeToString([]byte("dev-secret")), "run_3", now, sign("dev-secret", "run_3", now, body), body, true},
	}
}

// TestReadmeSignatureSample: the README's Go sample accepts what the
// reactor signs and refuses a tampered body, a swapped id, another job's
// secret or an old timestamp.
func TestReadmeSignatureSample(t *testing.T) {
	t.Parallel()
	for _, tc := range readmeCases() {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set(reactor.HeaderWebhookID, tc.id)
		r.Header.Set(reactor.HeaderWebhookTimestamp, tc.ts)
		r.Header.Set(reactor.HeaderWebhookSignature, tc.signature)
		if got := verifyFromReadme(tc.secret, r, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: verify = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReadmeSignatureSamplesOtherLanguages runs the README's Python and
// Node samples, as written, on the same cases (skipped where python3 or
// node is not installed).
func TestReadmeSignatureSamplesOtherLanguages(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(after, fence string) string {
		i := strings.Index(string(b), after)
		if i < 0 {
			t.Fatalf("README has no %q", after)
		}
		rest := string(b[i:])
		j := strings.Index(rest, "```"+fence+"\n")
		k := strings.Index(rest[j+4+len(fence):], "```")
		return rest[j+4+len(fence) : j+4+len(fence)+k]
	}
	langs := []struct{ bin, code, driver string }{
		{"python3", block("In Python:", "python"), `
import json, os, sys
c = json.loads(os.environ["CASE"])
h = {"webhook-id": c["id"], "webhook-timestamp": c["ts"], "webhook-signature": c["signature"]}
print("true" if verify(c["secret"], h, c["body"].encode()) else "false")
`},
		{"node", block("In Node:", "js"), `
const c = JSON.parse(process.env.CASE);
const h = {"webhook-id": c.id, "webhook-timestamp": c.ts, "webhook-signature": c.signature};
console.log(verify(c.secret, h, Buffer.from(c.body)) ? "true" : "false");
`},
	}
	for _, l := range langs {
		bin, err := exec.LookPath(l.bin)
		if err != nil {
			t.Logf("%s not installed: its README sample is not run", l.bin)
			continue
		}
		for _, tc := range readmeCases() {
			js, _ := json.Marshal(map[string]string{"secret": tc.secret, "id": tc.id, "ts": tc.ts, "signature": tc.signature, "body": tc.body})
			arg := "-c"
			if l.bin == "node" {
				arg = "-e"
			}
			cmd := exec.Command(bin, arg, l.code+l.driver)
			cmd.Env = append(os.Environ(), "CASE="+string(js))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s sample: %v\n%s", l.bin, err, out)
			}
			if got := strings.TrimSpace(string(out)) == "true"; got != tc.want {
				t.Errorf("%s sample, %s: verify = %v, want %v", l.bin, tc.name, got, tc.want)
			}
		}
	}
}
