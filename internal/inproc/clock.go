// Package inproc is what the lockers share with a lock store that lives
// in the process (stores/memory): a clock that reads the monotonic clock
// only (Clock), and the capability by which such a store spares a
// lock.SingleLocker its own bookkeeping (Store): it reports the clock
// reading at which it decided a call, so that the locker reads no clock
// around it, and it records which locker took each lock, so that the
// locker keeps no set of held locks of its own.
package inproc

import (
	"sync/atomic"
	"time"
)

// Clock reads the time with one monotonic clock reading: the wall clock
// is read once a second at most, into an anchor, and a time is the anchor
// plus the monotonic time elapsed since. (time.Now reads both clocks, at
// twice the cost.) A time from it carries a monotonic reading, which
// in-process comparisons such as lock.Lock.Valid use; its wall reading,
// which only a Lock sent to another process uses, may differ from the
// wall clock by as much as the wall clock was adjusted in the last
// second. The zero Clock is ready to use.
type Clock struct {
	anchor atomic.Pointer[time.Time]
}

// anchorAge bounds the age of the clock's wall-clock anchor.
const anchorAge = time.Second

// Now returns the current time.
func (c *Clock) Now() time.Time {
	if a := c.anchor.Load(); a != nil {
		// Outside [0, anchorAge): an old anchor, or one from another
		// clock (a testing/synctest bubble's).
		if d := time.Since(*a); d >= 0 && d < anchorAge {
			return a.Add(d)
		}
	}
	t := time.Now()
	c.anchor.Store(&t)
	return t
}
