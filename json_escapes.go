package chronos

import (
	"strconv"
	"unicode"
	"unicode/utf16"
)

// storableEscapes reports whether every \u escape of b, valid JSON, is one
// Postgres's jsonb accepts: not \u0000, and no surrogate that is not half
// of a pair. A payload is stored as written (json), but a job's history
// holds its fields as jsonb, so a payload jsonb refuses would make the
// job's audit entries, and with them its updates and its deletion, fail.
func storableEscapes(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 < len(b) && b[i+1] != 'u' {
			i++ // \" \\ \/ \b \f \n \r \t: one character
			continue
		}
		r, ok := escapedUnit(b, i)
		switch {
		case !ok || r == 0:
			return false
		case utf16.IsSurrogate(r):
			// DecodeRune refuses a low half first and a high half alone.
			low, ok := escapedUnit(b, i+6)
			if !ok || utf16.DecodeRune(r, low) == unicode.ReplacementChar {
				return false
			}
			i += 11
		default:
			i += 5
		}
	}
	return true
}

// escapedUnit is the UTF-16 code unit of the \uXXXX escape at b[i:].
func escapedUnit(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	u, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
	return rune(u), err == nil
}
