package reactor

import "time"

// fillBatch adds to batch what in already holds, up to most items, and,
// when more than one was waiting (load), what arrives within linger. It
// reports whether in is still open. The completer and the starter batch
// their writes with it: under load a batch grows while the previous one
// is written, and a lone item is written at once.
func fillBatch[T any](in <-chan T, batch *[]T, most int, linger time.Duration) bool {
	drain := func() bool {
		for len(*batch) < most {
			select {
			case x, ok := <-in:
				if !ok {
					return false
				}
				*batch = append(*batch, x)
			default:
				return true
			}
		}
		return true
	}
	if !drain() {
		return false
	}
	if len(*batch) == 1 || len(*batch) >= most {
		return true
	}
	t := time.NewTimer(linger)
	defer t.Stop()
	for len(*batch) < most {
		select {
		case x, ok := <-in:
			if !ok {
				return false
			}
			*batch = append(*batch, x)
		case <-t.C:
			return true
		}
	}
	return true
}
