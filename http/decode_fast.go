package http

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// decodeFast is decodeObject's path for a body that is right: valid JSON,
// one object, every key a field's exact name, none twice, and every value
// of its field's type. It checks the keys with one scan of the bytes and
// decodes the object with one json.Unmarshal, where decodeObject's
// per-field path tokenizes the body and decodes each value on its own so
// that every complaint can name its key (that was a sixth of a create's
// CPU). It reports false, with dst as it was, for any body it does not
// accept; decodeObject then takes its careful path, so a client's
// mistake is explained exactly as before.
func decodeFast(body []byte, dst any) (int, bool) {
	t := reflect.TypeOf(dst).Elem()
	if !fastDecodable(t) {
		return 0, false
	}
	// Restoring a shallow copy of dst undoes json.Unmarshal because every
	// caller decodes into a zero value: no pointer in it to write through.
	target := reflect.ValueOf(dst).Elem()
	saved := reflect.New(t).Elem()
	saved.Set(target)
	// json.Unmarshal checks that the body is valid JSON before it decodes
	// anything, so exactKeys, which needs valid JSON, scans after it:
	// one pass over the bytes fewer than asking json.Valid first.
	if err := json.Unmarshal(body, dst); err != nil {
		target.Set(saved) // not JSON, or a value of the wrong type: the careful path names it
		return 0, false
	}
	n, ok := exactKeys(body, fieldsOf(t))
	if !ok {
		target.Set(saved) // a key unknown, escaped or twice: json.Unmarshal let it pass
		return 0, false
	}
	return n, true
}

var fastCache sync.Map // reflect.Type → bool

// fastDecodable says whether json.Unmarshal of a whole object into a
// value of struct type t decodes each member exactly as decodeObject's
// per-field decoding would: no embedded field (whose members
// json.Unmarshal would promote) and no ",string" option (which it would
// honour, and per-field decoding ignores).
func fastDecodable(t reflect.Type) bool {
	if v, ok := fastCache.Load(t); ok {
		return v.(bool)
	}
	ok := t.Kind() == reflect.Struct
	for i := 0; ok && i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous || hasStringOption(f.Tag.Get("json")) {
			ok = false
		}
	}
	fastCache.Store(t, ok)
	return ok
}

// hasStringOption says whether a json struct tag has the ",string" option.
func hasStringOption(tag string) bool {
	_, opts, _ := strings.Cut(tag, ",")
	return slices.Contains(strings.Split(opts, ","), "string")
}

// exactKeys scans body, valid JSON, and returns how many members its
// top-level object has, with true when it is an object whose keys are
// all in fields, spelled exactly (no escape in them), none twice.
func exactKeys(body []byte, fields map[string]int) (int, bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, false
	}
	var seen []int // field indexes, few: a linear search beats a map
	for i = skipSpace(body, i+1); i < len(body) && body[i] != '}'; {
		if body[i] != '"' {
			return 0, false
		}
		end := i + 1
		for end < len(body) && body[end] != '"' {
			if body[end] == '\\' {
				return 0, false // an escaped key: the careful path decodes it
			}
			end++
		}
		idx, known := fields[string(body[i+1:end])]
		if !known {
			return 0, false
		}
		for _, s := range seen {
			if s == idx {
				return 0, false
			}
		}
		seen = append(seen, idx)
		i = skipSpace(body, end+1) + 1 // past ':'
		i = skipSpace(body, skipValue(body, skipSpace(body, i)))
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return len(seen), true
}

// skipValue returns the index just past the JSON value that starts at i
// in body, which is valid JSON.
func skipValue(body []byte, i int) int {
	depth := 0
	for ; i < len(body); i++ {
		switch body[i] {
		case '"':
			i = skipString(body, i)
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i // the end of a number or literal
			}
		}
	}
	return i
}

// skipString returns the index of the closing quote of the string whose
// opening quote is at i.
func skipString(body []byte, i int) int {
	for i++; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return i
}

func skipSpace(body []byte, i int) int {
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i
}
