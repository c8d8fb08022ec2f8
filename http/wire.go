package http

import (
	"bytes"
	"strconv"
	"time"
)

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
