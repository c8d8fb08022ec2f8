// Package keyslots counts the long-lived streams each API key holds open
// and refuses one past a cap: the API's event tap and the console's event
// stream each pin a goroutine and a bus subscription for as long as they
// last, so one leaked or looping key must not pile them up.
package keyslots

import "sync"

// Slots counts the open streams per key. The zero value has no cap; set
// Max before first use. A key's count is dropped once it falls to zero, so
// the map is bounded by the keys with a stream open.
type Slots struct {
	// Max is the most streams one key may hold at once; 0 means no cap.
	Max int

	mu   sync.Mutex
	open map[string]int
}

// Take takes one of key's slots, if one is free; the caller gives it back
// with Give when its stream ends.
func (s *Slots) Take(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Max > 0 && s.open[key] >= s.Max {
		return false
	}
	if s.open == nil {
		s.open = map[string]int{}
	}
	s.open[key]++
	return true
}

// Give returns a slot that Take took.
func (s *Slots) Give(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[key]--; s.open[key] <= 0 {
		delete(s.open, key)
	}
}

// Open is how many of key's slots are taken.
func (s *Slots) Open(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[key]
}
