package lock

// HeldCount returns how many locks l's held set records, released or
// not: what its memory is proportional to.
func HeldCount(l Locker) int {
	var h *heldSet
	switch l := l.(type) {
	case *SingleLocker:
		h = &l.held
	case *MultiLocker:
		h = &l.held
	}
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		n += len(s.locks)
		s.mu.Unlock()
	}
	return n
}
