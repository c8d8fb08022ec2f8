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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
)

// The docs these tests hold to the code (they moved out of the README).
const (
	configDoc   = "../../docs/operations.md" // the configuration table
	securityDoc = "../../docs/security.md"   // the signature samples
)

// TestReadmeDocumentsEveryVariable: the configuration table of the
// operations page has a row for every variable serve reads.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range serveVars {
		if !strings.Contains(string(b), "| `"+v.name+"` |") {
			t.Errorf("%s has no configuration row for %s", configDoc, v.name)
		}
	}
}

// verifyFromReadme is the security page's Go signature check, word for
// word (TestReadmeSignatureSample checks that the page still has it).
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
	doc, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := string(src[strings.Index(string(src), "func verifyFromReadme("):])
	fn = strings.Replace(fn[:strings.Index(fn, "\n}\n")+3], "verifyFromReadme", "verify", 1)
	if !strings.Contains(string(doc), fn) {
		t.Errorf("%s's Go sample is no longer verifyFromReadme, word for word:\n%s", securityDoc, fn)
	}
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

// TestReadmeSignatureSamplesOtherLanguages runs the security page's Python
// and Node samples, as written, on the same cases (skipped where python3 or
// node is not installed): one interpreter per language verifies every
// case, one verdict a line, since starting one per case cost seconds each
// on a loaded machine.
func TestReadmeSignatureSamplesOtherLanguages(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	block := func(after, fence string) string {
		i := strings.Index(string(b), after)
		if i < 0 {
			t.Fatalf("%s has no %q", securityDoc, after)
		}
		rest := string(b[i:])
		j := strings.Index(rest, "```"+fence+"\n")
		k := strings.Index(rest[j+4+len(fence):], "```")
		return rest[j+4+len(fence) : j+4+len(fence)+k]
	}
	langs := []struct{ bin, arg, code, driver string }{
		{"python3", "-c", block("In Python:", "python"), `
import json, os, sys
for c in json.loads(os.environ["CASES"]):
    h = {"webhook-id": c["id"], "webhook-timestamp": c["ts"], "webhook-signature": c["signature"]}
    print("true" if verify(c["secret"], h, c["body"].encode()) else "false")
`},
		{"node", "-e", block("In Node:", "js"), `
for (const c of JSON.parse(process.env.CASES)) {
  const h = {"webhook-id": c.id, "webhook-timestamp": c.ts, "webhook-signature": c.signature};
  console.log(verify(c.secret, h, Buffer.from(c.body)) ? "true" : "false");
}
`},
	}
	cases := readmeCases()
	input := make([]map[string]string, len(cases))
	for i, tc := range cases {
		input[i] = map[string]string{"secret": tc.secret, "id": tc.id, "ts": tc.ts, "signature": tc.signature, "body": tc.body}
	}
	js, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range langs {
		bin, err := exec.LookPath(l.bin)
		if err != nil {
			t.Logf("%s not installed: its README sample is not run", l.bin)
			continue
		}
		cmd := exec.Command(bin, l.arg, l.code+l.driver)
		cmd.Env = append(os.Environ(), "CASES="+string(js))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s sample: %v\n%s%s", l.bin, err, out, &stderr)
		}
		verdicts := strings.Fields(string(out))
		if len(verdicts) != len(cases) {
			t.Fatalf("%s sample printed %d verdicts for %d cases:\n%s%s", l.bin, len(verdicts), len(cases), out, &stderr)
		}
		for i, tc := range cases {
			if got := verdicts[i] == "true"; got != tc.want || (verdicts[i] != "true" && verdicts[i] != "false") {
				t.Errorf("%s sample, %s: verify printed %q, want %v", l.bin, tc.name, verdicts[i], tc.want)
			}
		}
	}
}
