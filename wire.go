package chronos

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AppendJSON appends j as json.Marshal writes it, byte for byte, without
// its reflection for the values most jobs hold (see wireEncoder): a batch
// of a thousand created jobs is answered with a thousand of them.
func (j *Job) AppendJSON(b []byte) []byte {
	plan := jobWirePlan()
	if plan == nil {
		return appendMarshalled(b, j)
	}
	out, ok := appendObject(b, j, plan, "")
	if !ok {
		return appendMarshalled(b, j)
	}
	return out
}

// appendObject appends a JSON object of j's members in plan: each its
// prefix, its value and then suffix. ok is false when a value does not
// encode (json.Marshal fails on it); b's bytes are then left as they were.
func appendObject(b []byte, j *Job, plan []wireField, suffix string) (_ []byte, ok bool) {
	v := reflect.ValueOf(j).Elem()
	b = append(b, '{')
	for i, f := range plan {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.prefix...)
		if b, ok = f.enc(b, v.Field(f.index)); !ok {
			return b, false
		}
		b = append(b, suffix...)
	}
	return append(b, '}'), true
}

// appendMarshalled appends json.Marshal's encoding of a job, which always
// marshals (it writes null should it not).
func appendMarshalled(b []byte, j *Job) []byte {
	raw, err := json.Marshal(j)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// wireField is one member of Job's JSON form: where it is in the struct,
// its key, what a plan writes before its value (empty in jobWireFields),
// and how its value is written.
type wireField struct {
	index  int
	key    string
	prefix string
	enc    wireEncoder
}

// withPrefix is f with prefix set to format's expansion of its key.
func (f wireField) withPrefix(format string) wireField {
	f.prefix = fmt.Sprintf(format, f.key)
	return f
}

// jobWireFields is Job's members in the order json.Marshal writes them,
// each with its key, or nil when Job has a field whose form a plain walk
// of its fields would get wrong (an embedded struct, a tag option such
// as omitempty, a field without a tag): then the callers take
// json.Marshal's way.
var jobWireFields = sync.OnceValue(func() []wireField {
	t := reflect.TypeFor[Job]()
	var fields []wireField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if f.Anonymous || tag == "" || strings.Contains(tag, ",") {
			return nil
		}
		if tag != "-" {
			fields = append(fields, wireField{index: i, key: tag, enc: encoderFor(f.Type)})
		}
	}
	return fields
})

// jobWirePlan is jobWireFields with each prefix the member's key and
// colon.
var jobWirePlan = sync.OnceValue(func() []wireField {
	fields := jobWireFields()
	if fields == nil {
		return nil
	}
	plan := make([]wireField, len(fields))
	for i, f := range fields {
		plan[i] = f.withPrefix(`"%s":`)
	}
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
