package keyslots

import "testing"

func TestSlotsCapPerKey(t *testing.T) {
	s := Slots{Max: 2}
	for i := range 2 {
		if !s.Take("a") {
			t.Fatalf("slot %d of a key with Max 2 was refused", i+1)
		}
	}
	if s.Take("a") {
		t.Fatal("a third slot of a key with Max 2 was given")
	}
	if !s.Take("b") {
		t.Fatal("another key's slot was refused")
	}
	s.Give("a")
	if !s.Take("a") {
		t.Fatal("a slot given back was not free again")
	}
	s.Give("a")
	s.Give("a")
	s.Give("b")
	if len(s.open) != 0 {
		t.Fatalf("counts left after every slot was given back: %v", s.open)
	}
}

func TestSlotsWithoutCap(t *testing.T) {
	var s Slots
	for i := range 100 {
		if !s.Take("a") {
			t.Fatalf("slot %d refused without a cap", i+1)
		}
	}
}
