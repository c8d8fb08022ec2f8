package chronos

import (
	"bytes"
	"encoding/json"
)

// Opt is a field of a partial update. Absent from the JSON body, it is not
// Set and the stored value is untouched; present as null, it is Set and Null
// (clear the value); otherwise it carries the new Value.
type Opt[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Some returns an Opt that sets v.
func Some[T any](v T) Opt[T] { return Opt[T]{Set: true, Value: v} }

// UnmarshalJSON is only called for keys present in the body, which is what
// lets an absent field stay untouched.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		var zero T
		o.Value = zero
		return nil
	}
	o.Null = false
	return json.Unmarshal(b, &o.Value)
}

// MarshalJSON writes null for an unset or null Opt.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}
