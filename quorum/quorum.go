package quorum

import "strconv"

// Majority is met when more than half of the stores granted the lock:
// 3 of 5, 2 of 3, 3 of 4. It tolerates the loss of a minority of stores.
type Majority struct{}

// Met reports whether granted is more than half of total.
func (Majority) Met(granted, total int) bool { return granted > total/2 }

// String returns "majority".
func (Majority) String() string { return "majority" }

// Unanimous is met when every store granted the lock. It tolerates the
// loss of no store, but a lock it grants survives the loss of all stores
// but one.
type Unanimous struct{}

// Met reports whether granted equals total.
func (Unanimous) Met(granted, total int) bool { return granted >= total }

// String returns "unanimous".
func (Unanimous) String() string { return "unanimous" }

// AtLeast is met when at least that many stores granted the lock. To keep
// mutual exclusion it must be more than half of the stores.
type AtLeast int

// Met reports whether granted is at least n.
func (n AtLeast) Met(granted, total int) bool { return granted >= int(n) }

// String returns "at least N".
func (n AtLeast) String() string { return "at least " + strconv.Itoa(int(n)) }
