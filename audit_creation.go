package chronos

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CreationChanges is JobChanges(nil, j) already encoded as the audit
// entry's changes object ({"field": {"after": value}, ...}, keys sorted,
// as json.Marshal writes the map), byte for byte. Every create writes
// one, so it neither builds the map of FieldChanges nor encodes the job
// and splits it again: it walks creationPlan, writing the values most
// jobs hold (plain strings, numbers, booleans, times, nulls and empty
// maps and lists) itself, and handing any other value to json.Marshal.
// Encoding the job with reflection and splitting it was a tenth of a
// batch create's CPU (issue 21).
func CreationChanges(j *Job) string {
	if j == nil {
		return "{}"
	}
	plan := creationPlan()
	if plan == nil {
		return string(mustMarshal(JobChanges(nil, j)))
	}
	if j.Headers == nil || len(j.Headers) > 0 {
		j = j.Redacted() // masks secrets, and shows no headers as {}
	}
	v := reflect.ValueOf(j).Elem()
	b := make([]byte, 0, 1024)
	b = append(b, '{')
	for i, f := range plan {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.prefix...)
		var ok bool
		if b, ok = f.enc(b, v.Field(f.index)); !ok {
			return string(mustMarshal(JobChanges(nil, j)))
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	return string(b)
}

// creationField is one audited field of Job: where it is in the struct
// and what precedes its value in the audit entry (`"key":{"after":`).
type creationField struct {
	index  int
	prefix string
	enc    wireEncoder
}

// creationPlan is Job's audited fields in key order, or nil when Job has
// a field whose wire form a plain walk of its fields would get wrong (an
// embedded struct, a tag option such as omitempty): then CreationChanges
// takes JobChanges's way.
var creationPlan = sync.OnceValue(func() []creationField {
	t := reflect.TypeFor[Job]()
	var plan []creationField
	keys := map[int]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if f.Anonymous || tag == "" || strings.Contains(tag, ",") {
			return nil
		}
		if tag == "-" || auditSkipped[tag] {
			continue
		}
		keys[i] = tag
		plan = append(plan, creationField{index: i, prefix: `"` + tag + `":{"after":`, enc: encoderFor(f.Type)})
	}
	slices.SortFunc(plan, func(a, b creationField) int { return strings.Compare(keys[a.index], keys[b.index]) })
	return plan
})

// wireEncoder appends a value as json.Marshal writes it; ok is false
// when json.Marshal fails on it.
type wireEncoder func(b []byte, v reflect.Value) (_ []byte, ok bool)

// encoderFor is the wireEncoder of values of t: its own for the kinds of
// value a job's fields hold, json.Marshal for any other.
func encoderFor(t reflect.Type) wireEncoder {
	switch t {
	case reflect.TypeFor[time.Time]():
		return appendTime
	case reflect.TypeFor[json.RawMessage]():
		return appendRaw
	}
	if custom(t) {
		return appendMarshal
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := encoderFor(t.Elem())
		return func(b []byte, v reflect.Value) ([]byte, bool) {
			if v.IsNil() {
				return append(b, "null"...), true
			}
			return elem(b, v.Elem())
		}
	case reflect.String:
		return appendString
	case reflect.Bool:
		return func(b []byte, v reflect.Value) ([]byte, bool) { return strconv.AppendBool(b, v.Bool()), true }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) ([]byte, bool) { return strconv.AppendInt(b, v.Int(), 10), true }
	case reflect.Float64:
		return appendFloat
	case reflect.Map:
		return emptyOr("{}")
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 { // []byte is base64
			return emptyOr("[]")
		}
	}
	return appendMarshal
}

// appendTime writes a time as time.Time's MarshalJSON does, for the years
// it accepts.
func appendTime(b []byte, v reflect.Value) ([]byte, bool) {
	t := v.Interface().(time.Time)
	if t.Year() < 0 || t.Year() > 9999 {
		return appendMarshal(b, v)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// appendRaw writes a json.RawMessage that json.Marshal would leave as it
// is (valid, compact, nothing it escapes for HTML) as it is; nil is null.
func appendRaw(b []byte, v reflect.Value) ([]byte, bool) {
	raw := v.Bytes()
	switch {
	case v.IsNil():
		return append(b, "null"...), true
	case !plainRaw(raw):
		return appendMarshal(b, v)
	}
	return append(b, raw...), true
}

// plainRaw says whether json.Marshal writes raw unchanged: it is valid
// JSON and holds no byte that compacting or HTML escaping would touch
// (white space, <, >, &, and the lead byte of U+2028 and U+2029, which it
// escapes too; other characters with that lead byte are passed over to be
// safe).
func plainRaw(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xe2:
			return false
		}
	}
	return json.Valid(raw)
}

// appendString writes a string that needs no escaping itself.
func appendString(b []byte, v reflect.Value) ([]byte, bool) {
	s := v.String()
	if !plainString(s) {
		return appendMarshal(b, v)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// appendFloat writes a float64 as encoding/json does in the range where
// that is the shortest decimal, with no exponent.
func appendFloat(b []byte, v reflect.Value) ([]byte, bool) {
	if f := v.Float(); f == 0 || (math.Abs(f) >= 1e-6 && math.Abs(f) < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64), true
	}
	return appendMarshal(b, v)
}

// emptyOr writes a nil map or slice as null and an empty one as empty,
// and leaves the others to json.Marshal.
func emptyOr(empty string) wireEncoder {
	return func(b []byte, v reflect.Value) ([]byte, bool) {
		switch {
		case v.IsNil():
			return append(b, "null"...), true
		case v.Len() == 0:
			return append(b, empty...), true
		}
		return appendMarshal(b, v)
	}
}

// appendMarshal appends json.Marshal's encoding of v.
func appendMarshal(b []byte, v reflect.Value) ([]byte, bool) {
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return b, false
	}
	return append(b, raw...), true
}

// custom says whether values of t encode themselves (json.Marshaler,
// encoding.TextMarshaler), which json.Marshal defers to.
func custom(t reflect.Type) bool {
	marshaler, text := reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()
	return t.Implements(marshaler) || t.Implements(text) ||
		reflect.PointerTo(t).Implements(marshaler) || reflect.PointerTo(t).Implements(text)
}

// plainString says whether json.Marshal writes s as itself between
// quotes: printable ASCII without the characters it escapes (the quote,
// the backslash, and <, > and & for HTML).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// mustMarshal is json.Marshal of a value that always marshals (a map of
// FieldChanges), "{}" should it not.
func mustMarshal(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return raw
}
