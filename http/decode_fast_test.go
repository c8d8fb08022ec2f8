package http

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/chronoshq/chronos"
)

// FuzzDecodeFast checks that decodeObject's fast path changes nothing a
// client sees: for any body, decodeObject (fast path first) and
// decodeCareful (the per-field path alone) leave the same job update,
// count the same keys and refuse with the same error. The seeds run as a
// regular test.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		` { "name" : "a" ,	"max_retries":2 }
`,
		`{"name":"a","headers":{"Name":"x","name":"y"},"payload":{"name":[1,"}",{"\"":null}]}}`,
		`{"payload":"a\"b\\","labels":{"k":"v"},"enabled":true,"run_at":null}`,
		`{"n\u0061me":"a"}`,
		`{"name":"a","name":"b"}`,
		`{"Name":"a"}`,
		`{"max_retries":"3"}`,
		`{"max_retries":1.5,"name":"a"}`,
		`{"name":"a"} {"name":"b"}`,
		`{"name":"a"}x`,
		`[{"name":"a"}]`,
		`null`,
		`{}`,
		`{"generate_signing_secret":true,"exclude":[{"from":"2026-12-24","to":"2026-12-26"}]}`,
		`{"generate_signing_secret":null,"starts_at":"tomorrow"}`,
		`{"payload":-0.5e+3,"timeout_seconds":30,"jitter_seconds":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, careful chronos.JobUpdate
		n1, err1 := decodeObject(body, &fast)
		n2, err2 := decodeCareful(body, &careful)
		if n1 != n2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("%q: decodeObject = %d, %v; decodeCareful = %d, %v", body, n1, err1, n2, err2)
		}
		if !reflect.DeepEqual(fast, careful) {
			t.Fatalf("%q: decodeObject left %+v, decodeCareful %+v", body, fast, careful)
		}
	})
}

// TestDecodeFastTakesWellFormedBodies guards the point of the fast path: a
// right body is decoded by it, a wrong one is left to the careful path
// untouched.
func TestDecodeFastTakesWellFormedBodies(t *testing.T) {
	t.Parallel()
	var u chronos.JobUpdate
	if n, ok := decodeFast([]byte(fuzzSeeds[2]), &u); !ok || n != 14 {
		t.Fatalf("decodeFast(a well-formed job) = %d, %v; want 14, true", n, ok)
	}
	u = chronos.JobUpdate{Name: chronos.Some("kept")}
	if _, ok := decodeFast([]byte(`{"description":"x","max_retries":"3"}`), &u); ok {
		t.Fatal("decodeFast accepted a value of the wrong type")
	}
	if want := (chronos.JobUpdate{Name: chronos.Some("kept")}); !reflect.DeepEqual(u, want) {
		t.Fatalf("decodeFast left %+v after refusing; want it untouched", u)
	}
}
