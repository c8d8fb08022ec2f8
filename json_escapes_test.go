package chronos

import "testing"

// storableEscapes refuses what Postgres's jsonb refuses: \u0000 and half a
// surrogate pair (sql's TestPayloadEscapesAgreeWithJSONB holds the two
// together on a real server).
func TestStorableEscapes(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		`"plain"`: true, `"\u0000"`: false, `{"\u0000":1}`: false, `"a\\u0000"`: true, `"\\\u0000"`: false,
		`"\u0001"`: true, `"\ud83d\ude00"`: true, `"\ud83d"`: false, `"\ude00"`: false, `"\ud83d\u0041"`: false,
		`"\ud83dx"`: false, `["\uD83D\uDE00","\uDBFF\uDFFF"]`: true, `"\"\\\/\b\f\n\r\t"`: true, `"x\\"`: true, `1`: true,
	} {
		if got := storableEscapes([]byte(p)); got != want {
			t.Errorf("storableEscapes(%s) = %v, want %v", p, got, want)
		}
	}
}
