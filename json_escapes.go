package chronos

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
		cp, ok := escapedUnit(b, i)
		switch {
		case !ok || cp == 0 || cp >= 0xdc00 && cp <= 0xdfff:
			return false
		case cp >= 0xd800 && cp <= 0xdbff:
			low, ok := escapedUnit(b, i+6)
			if !ok || low < 0xdc00 || low > 0xdfff {
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
	var cp rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			cp = cp<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			cp = cp<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			cp = cp<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return cp, true
}
