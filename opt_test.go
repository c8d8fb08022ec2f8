package chronos

import (
	"encoding/json"
	"testing"
)

func TestOptJSONDecoding(t *testing.T) {
	t.Parallel()
	type body struct {
		N Opt[int]               `json:"n"`
		S Opt[string]            `json:"s"`
		M Opt[map[string]string] `json:"m"`
	}
	cases := []struct {
		in   string
		want body
	}{
		{`{}`, body{}},
		{`{"n": null}`, body{N: Opt[int]{Set: true, Null: true}}},
		{`{"n": 0}`, body{N: Some(0)}},
		{`{"n": 7, "s": ""}`, body{N: Some(7), S: Some("")}},
		{`{"s": "x", "m": null}`, body{S: Some("x"), M: Opt[map[string]string]{Set: true, Null: true}}},
		{`{"n": 1, "n": null}`, body{N: Opt[int]{Set: true, Null: true}}}, // last key wins
		{`{"n": null, "n": 2}`, body{N: Some(2)}},
		{`{"n":  null  }`, body{N: Opt[int]{Set: true, Null: true}}},
	}
	for _, tc := range cases {
		var got body
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got.N != tc.want.N || got.S != tc.want.S || got.M.Set != tc.want.M.Set || got.M.Null != tc.want.M.Null {
			t.Fatalf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
	var b body
	if err := json.Unmarshal([]byte(`{"n": "seven"}`), &b); err == nil {
		t.Fatal("wrong type accepted")
	}
	if err := json.Unmarshal([]byte(`{"m": {"a": "b"}}`), &b); err != nil || b.M.Value["a"] != "b" || !b.M.Set || b.M.Null {
		t.Fatalf("map value: %+v %v", b.M, err)
	}
}

func TestOptJSONEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Opt[int]
		want string
	}{
		{Opt[int]{}, "null"},
		{Opt[int]{Set: true, Null: true}, "null"},
		{Some(3), "3"},
	} {
		b, err := json.Marshal(tc.o)
		if err != nil || string(b) != tc.want {
			t.Fatalf("marshal %+v = %s, %v; want %s", tc.o, b, err, tc.want)
		}
	}
}
