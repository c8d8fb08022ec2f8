package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// readBody reads the whole (size-limited) request body.
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	if c.Request.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *nethttp.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.Limit)
		}
		if c.Request.Context().Err() != nil {
			return nil, fmt.Errorf("read request body: %w", c.Request.Context().Err())
		}
		// A body that breaks off mid-way is the client's problem.
		return nil, invalid("body", "could not be read: "+err.Error())
	}
	return b, nil
}

// decodeObject decodes body, which must be exactly one JSON object, into
// dst, a pointer to a struct with json tags. It is stricter than
// encoding/json and names the field in every complaint: key names must
// match exactly (no case folding), unknown and duplicate keys are refused,
// every value is decoded on its own so a type error names its key, and
// nothing but white space may follow the object. It returns how many keys
// the object had.
func decodeObject(body []byte, dst any) (int, error) {
	if n, ok := decodeFast(body, dst); ok {
		return n, nil
	}
	return decodeCareful(body, dst)
}

// decodeCareful is decodeObject's path that explains: it tokenizes the
// body and decodes each value on its own, so that each complaint names
// its key.
func decodeCareful(body []byte, dst any) (int, error) {
	fields := fieldsOf(reflect.TypeOf(dst).Elem())
	target := reflect.ValueOf(dst).Elem()

	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return 0, syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return 0, invalid("body", "must be a JSON object")
	}
	bad := map[string]string{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, syntaxError(err)
		}
		key, _ := tok.(string) // inside an object, the decoder only yields string keys
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, syntaxError(err)
		}
		name := fieldName(key)
		if seen[key] {
			bad[name] = "is given more than once"
			continue
		}
		seen[key] = true
		idx, ok := fields[key]
		if !ok {
			bad[name] = "unknown field"
			continue
		}
		if err := json.Unmarshal(raw, target.Field(idx).Addr().Interface()); err != nil {
			bad[name] = valueError(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return 0, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, invalid("body", "must hold a single JSON object, but more data follows it")
	}
	if len(bad) > 0 {
		return 0, chronos.InvalidFields(bad)
	}
	return len(seen), nil
}

// fieldName keeps a client's key printable and short in an error.
func fieldName(key string) string {
	if len(key) > 64 {
		key = key[:64] + "..."
	}
	return strings.ToValidUTF8(key, "?")
}

func syntaxError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return invalid("body", fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: ")))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("body", "malformed JSON: unexpected end of input")
	}
	return invalid("body", "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

// valueError explains why one field's value did not decode.
func valueError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		msg := "must be " + jsonTypeName(te.Type)
		if te.Value != "" {
			msg += ", not " + te.Value
		}
		if te.Field != "" {
			msg = te.Field + ": " + msg
		}
		return msg
	}
	var pe *time.ParseError
	if errors.As(err, &pe) || strings.Contains(err.Error(), "Time.UnmarshalJSON") {
		return "must be an RFC 3339 time, e.g. 2026-12-03T02:00:00Z"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonTypeName names a Go type the way a JSON client thinks of it.
func jsonTypeName(t reflect.Type) string {
	if t == reflect.TypeOf(time.Time{}) {
		return "an RFC 3339 time string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number in range"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "of type " + t.String()
}

var fieldCache sync.Map // reflect.Type → map[string]int

// fieldsOf maps the json names of t's fields to their indexes.
func fieldsOf(t reflect.Type) map[string]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = i
	}
	fieldCache.Store(t, m)
	return m
}
